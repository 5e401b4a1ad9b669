#include "core/comm.hpp"

#include <utility>

namespace avb {

namespace {
// Tag of the MPI_Comm_create_group in Comm::duplicate (any fixed value: callers
// never duplicate the same parent concurrently).
constexpr int kDuplicateTag = 7001;

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

Comm Comm::duplicate(MPI_Comm parent) {
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
  return Comm(dup, std::make_shared<Traffic>());
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
      traffic_(other.traffic_) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = std::exchange(other.rank_, -1);
    size_ = std::exchange(other.size_, 0);
    owned_ = std::exchange(other.owned_, true);
    parent_rank_ = std::move(other.parent_rank_);
    traffic_ = other.traffic_;
  }
  return *this;
}

Comm Comm::split(int color, int key) const {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &out), "MPI_Comm_split");
  return Comm(out, traffic_);
}

Comm Comm::subgroup(std::span<const int> members) const {
  Comm view;
  view.comm_ = comm_;
  view.owned_ = false;
  view.traffic_ = traffic_;
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

void Comm::wait_all(std::vector<MPI_Request>& requests) {
  const int rc = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  requests.clear();
  check_mpi(rc, "MPI_Waitall");
}

void Comm::barrier() const { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

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
