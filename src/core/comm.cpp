#include "core/comm.hpp"

#include <utility>

namespace avb {

namespace {
// Tag of the MPI_Comm_create_group in Comm::duplicate (any fixed value: callers
// never duplicate the same parent concurrently).
constexpr int kDuplicateTag = 7001;
// Tag of the MPI_Comm_create_group in Comm::create_group: distinct from the
// duplicate's, and shared by a round's groups, which are disjoint.
constexpr int kGroupTag = 7002;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}
}  // namespace

MpiError::MpiError(const std::string& call, int code)
    : Error(call + " failed: " + mpi_error_text(code)), code_(code) {}

void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw MpiError(call, rc);
}

Comm::Comm(MPI_Comm comm, std::shared_ptr<Traffic> traffic) : comm_(comm), traffic_(std::move(traffic)) {
  if (comm_ != MPI_COMM_NULL) {
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
}

Comm Comm::duplicate(MPI_Comm parent, Watch* watch) {
  if (watch && watch->polls()) {
    // Real MPI: the non-blocking duplicate, so that the wait is watched.
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Comm_idup(parent, &dup, &request), "MPI_Comm_idup");
    watch->wait_all(std::span<MPI_Request>(&request, 1), "MPI_Comm_idup");
    Comm comm(dup, std::make_shared<Traffic>());
    comm.set_watch(watch);
    return comm;
  }
  // A new communicator over the parent's own group rather than MPI_Comm_dup: the
  // same members and order, a fresh context. Under SMPI, where every simulated
  // rank lives in one process, MPI_Comm_dup copies the group's rank tables (12
  // bytes per member per rank: 3 GB per duplicate at 16384 peers), while a
  // communicator made from the group shares it.
  MPI_Group whole = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(parent, &whole), "MPI_Comm_group");
  MPI_Comm dup = MPI_COMM_NULL;
  const int rc = MPI_Comm_create_group(parent, whole, kDuplicateTag, &dup);
  MPI_Group_free(&whole);
  check_mpi(rc, "MPI_Comm_create_group");
  Comm comm(dup, std::make_shared<Traffic>());
  comm.set_watch(watch);
  return comm;
}

Comm::~Comm() {
  if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);  // no throw from a destructor
}

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      rank_(std::exchange(other.rank_, -1)),
      size_(std::exchange(other.size_, 0)),
      owned_(std::exchange(other.owned_, true)),
      parent_rank_(std::move(other.parent_rank_)),
      traffic_(other.traffic_),
      padding_(other.padding_),
      watch_(other.watch_) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = std::exchange(other.rank_, -1);
    size_ = std::exchange(other.size_, 0);
    owned_ = std::exchange(other.owned_, true);
    parent_rank_ = std::move(other.parent_rank_);
    traffic_ = other.traffic_;
    padding_ = other.padding_;
    watch_ = other.watch_;
  }
  return *this;
}

void Comm::set_model_length(ModelLength length) {
  padding_ = length.model > length.dim ? std::make_shared<Padding>(length) : nullptr;
}

std::size_t Comm::model_length(std::size_t length) const {
  return padding_ && length == padding_->length().dim ? padding_->length().model : length;
}

Comm Comm::subgroup(std::span<const int> members) const {
  Comm view;
  view.comm_ = comm_;
  view.owned_ = false;
  view.traffic_ = traffic_;
  view.padding_ = padding_;
  view.watch_ = watch_;
  view.size_ = static_cast<int>(members.size());
  auto ranks = std::make_shared<std::vector<int>>();
  ranks->reserve(members.size());
  for (int m : members) {
    if (m == rank_) view.rank_ = static_cast<int>(ranks->size());
    ranks->push_back(to_parent(m));
  }
  if (view.rank_ < 0) throw Error("Comm::subgroup: rank " + std::to_string(rank_) + " is not a member");
  view.parent_rank_ = std::move(ranks);
  return view;
}

std::vector<MPI_Request> Comm::staged(std::span<const MPI_Request> requests) const {
  if (!padding_ || !padding_->tracking()) return {};
  return {requests.begin(), requests.end()};
}

void Comm::finish_staged(std::span<const MPI_Request> handles) const {
  for (MPI_Request handle : handles) padding_->finish(handle);
}

Comm Comm::create_group(std::span<const int> members) const {
  std::vector<int> ranks;
  ranks.reserve(members.size());
  bool member = false;
  for (int m : members) {
    member = member || m == rank_;
    ranks.push_back(to_parent(m));
  }
  if (!member) throw Error("Comm::create_group: rank " + std::to_string(rank_) + " is not a member");
  MPI_Group whole = MPI_GROUP_NULL, part = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(comm_, &whole), "MPI_Comm_group");
  const int included = MPI_Group_incl(whole, static_cast<int>(ranks.size()), ranks.data(), &part);
  MPI_Group_free(&whole);
  check_mpi(included, "MPI_Group_incl");
  MPI_Comm made = MPI_COMM_NULL;
  int rc = MPI_SUCCESS;
  {
    // No non-blocking form exists: a stall here is named, not timed out.
    Watch::Waiting waiting(watch_, "MPI_Comm_create_group", -1);
    rc = MPI_Comm_create_group(comm_, part, kGroupTag, &made);
  }
  MPI_Group_free(&part);
  check_mpi(rc, "MPI_Comm_create_group");
  Comm group(made, traffic_);
  group.padding_ = padding_;
  group.watch_ = watch_;
  return group;
}

void Comm::wait_all(std::vector<MPI_Request>& requests, const char* what) const {
  const auto handles = staged(requests);
  if (watch_) {
    watch_->wait_all(requests, what);
  } else {
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  finish_staged(handles);
  requests.clear();
}

void Comm::wait(MPI_Request& request, const char* what) const {
  const auto handles = staged(std::span<const MPI_Request>(&request, 1));
  if (polls()) {
    watch_->wait_all(std::span<MPI_Request>(&request, 1), what);
  } else {
    Watch::Waiting waiting(watch_, what, -1);
    check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  finish_staged(handles);
}

int Comm::wait_any(std::span<MPI_Request> requests, MPI_Status* status, const char* what) const {
  const auto handles = staged(requests);
  int index = MPI_UNDEFINED;
  if (watch_)
    index = watch_->wait_any(requests, status, what);
  else
    check_mpi(MPI_Waitany(static_cast<int>(requests.size()), requests.data(), &index, status), "MPI_Waitany");
  if (index != MPI_UNDEFINED && !handles.empty()) finish_staged(std::span(handles).subspan(static_cast<std::size_t>(index), 1));
  return index;
}

bool Comm::test(MPI_Request& request, MPI_Status* status) const {
  const auto handles = staged(std::span<const MPI_Request>(&request, 1));
  int done = 0;
  check_mpi(MPI_Test(&request, &done, status), "MPI_Test");
  if (done) finish_staged(handles);
  return done != 0;
}

void Comm::post_send(const void* data, int n, MPI_Datatype type, int dest, int tag, bool sync,
                     std::vector<MPI_Request>& requests, std::size_t pad) {
  std::byte* staging = nullptr;
  if (pad > 0) {
    int element = 0;
    check_mpi(MPI_Type_size(type, &element), "MPI_Type_size");
    const std::size_t bytes = static_cast<std::size_t>(element) * static_cast<std::size_t>(n);
    staging = padding_->stage(data, bytes);
    data = staging;
    n = static_cast<int>(bytes + pad);
    type = MPI_BYTE;
  }
  requests.emplace_back();
  if (sync)
    check_mpi(MPI_Issend(data, n, type, to_parent(dest), tag, comm_, &requests.back()), "MPI_Issend");
  else
    check_mpi(MPI_Isend(data, n, type, to_parent(dest), tag, comm_, &requests.back()), "MPI_Isend");
  if (staging) padding_->track(requests.back(), staging, nullptr, 0);
  if (watch_) watch_->note(requests.back(), to_parent(dest));
}

void Comm::post_recv(void* data, int n, MPI_Datatype type, std::size_t bytes, int source, int tag,
                     std::vector<MPI_Request>& requests, std::size_t pad) {
  requests.emplace_back();
  if (pad == 0) {
    check_mpi(MPI_Irecv(data, n, type, to_parent(source), tag, comm_, &requests.back()), "MPI_Irecv");
  } else {
    std::byte* staging = padding_->stage(nullptr, bytes);
    check_mpi(MPI_Irecv(staging, static_cast<int>(bytes + pad), MPI_BYTE, to_parent(source), tag, comm_,
                        &requests.back()),
              "MPI_Irecv");
    padding_->track(requests.back(), staging, data, bytes);
  }
  if (watch_) watch_->note(requests.back(), to_parent(source));
}

void Comm::blocking_send(const void* data, int n, MPI_Datatype type, std::size_t bytes, int dest, int tag, bool sync) {
  const std::size_t pad = pad_bytes(type, static_cast<std::size_t>(n), kByRule);
  count(bytes + pad);
  if (polls() || pad > 0) {
    std::vector<MPI_Request> one;
    post_send(data, n, type, dest, tag, sync, one, pad);
    wait_all(one, sync ? "MPI_Ssend" : "MPI_Send");
    return;
  }
  Watch::Waiting waiting(watch_, sync ? "MPI_Ssend" : "MPI_Send", to_parent(dest));
  if (sync)
    check_mpi(MPI_Ssend(data, n, type, to_parent(dest), tag, comm_), "MPI_Ssend");
  else
    check_mpi(MPI_Send(data, n, type, to_parent(dest), tag, comm_), "MPI_Send");
}

void Comm::blocking_recv(void* data, int n, MPI_Datatype type, int source, int tag) {
  const std::size_t pad = pad_bytes(type, static_cast<std::size_t>(n), kByRule);
  if (polls() || pad > 0) {
    int element = 0;
    check_mpi(MPI_Type_size(type, &element), "MPI_Type_size");
    std::vector<MPI_Request> one;
    post_recv(data, n, type, static_cast<std::size_t>(element) * static_cast<std::size_t>(n), source, tag, one, pad);
    wait_all(one, "MPI_Recv");
    return;
  }
  Watch::Waiting waiting(watch_, "MPI_Recv", to_parent(source));
  check_mpi(MPI_Recv(data, n, type, to_parent(source), tag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
}

void Comm::barrier() const {
  if (polls()) {
    std::vector<MPI_Request> one(1);
    check_mpi(MPI_Ibarrier(comm_, &one[0]), "MPI_Ibarrier");
    wait_all(one, "MPI_Barrier");
    return;
  }
  Watch::Waiting waiting(watch_, "MPI_Barrier", -1);
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

bool clock_is_global(const Comm& comm) {
#ifdef AVB_ENGINE_SMPI
  (void)comm;
  return true;  // every simulated rank reads the one simulated clock
#else
  int* flag = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm.raw(), MPI_WTIME_IS_GLOBAL, &flag, &found);
  return found && flag != nullptr && *flag != 0;
#endif
}

std::string engine_name() {
#ifdef AVB_ENGINE_SMPI
  return "smpi";
#elif defined(OPEN_MPI)
  return "openmpi";
#elif defined(MPICH)
  return "mpich";
#else
  return "mpi";
#endif
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  std::string version(text, static_cast<std::size_t>(length));
  if (auto nl = version.find('\n'); nl != std::string::npos) version.resize(nl);
  while (!version.empty() && (version.back() == '\0' || version.back() == ' ')) version.pop_back();
  return version;
}

}  // namespace avb
