// Comm: RAII over an MPI communicator, with typed point-to-point helpers that count
// what a protocol sends.
//
// Protocols talk only through Comm so that their bytes and messages are counted in
// one place (Traffic) and every MPI error becomes an MpiError naming the call.
// Measurement code uses raw() on a separate duplicate, so it is never counted.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/padding.hpp"
#include "core/watch.hpp"

namespace avb {

// Bytes and messages sent, shared by a communicator and every sub-communicator
// made from it, so that a protocol's whole traffic lands in one counter.
struct Traffic {
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
};

// Throws MpiError when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);

template <class T>
MPI_Datatype mpi_datatype() {
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, std::int32_t>) return MPI_INT32_T;
  else if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return MPI_UINT64_T;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return MPI_UINT16_T;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return MPI_UINT8_T;
  else static_assert(sizeof(T) == 0, "no MPI datatype for this type");
}

class Comm {
 public:
  // A duplicate of `parent` (normally MPI_COMM_WORLD), with errors returned
  // instead of aborting, and a fresh traffic counter. With a `watch`, the
  // duplicate reports to it (set_watch) and so does the collective that makes
  // it: a peer that stops between trials is then caught too.
  static Comm duplicate(MPI_Comm parent, Watch* watch = nullptr);

  Comm() = default;  // the null communicator (not a member of a group)
  ~Comm();
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  bool is_null() const { return comm_ == MPI_COMM_NULL; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm raw() const { return comm_; }
  Traffic& traffic() { return *traffic_; }
  const Traffic& traffic() const { return *traffic_; }

  // --model-dim: from now on, messages on this Comm and its views are charged as
  // if vectors had length.model coordinates (core/padding.hpp); model <= dim: not.
  void set_model_length(ModelLength length);
  // The length a vector of `length` coordinates stands for: the model's for the
  // run's vectors, its own otherwise. Protocols that cut the vector into parts cut
  // this length alike and pass each part's model size with its message.
  std::size_t model_length(std::size_t length) const;

  template <class T>
  void send(std::span<const T> data, int dest, int tag) {
    blocking_send(data.data(), static_cast<int>(data.size()), mpi_datatype<T>(), data.size_bytes(), dest, tag, false);
  }

  // Synchronous send (returns once the receive has started). For patterns where
  // the receiver is already waiting, such as trees: under SMPI 3.32 many small
  // "detached" MPI_Sends in flight cost far more wall time than these.
  template <class T>
  void ssend(std::span<const T> data, int dest, int tag) {
    blocking_send(data.data(), static_cast<int>(data.size()), mpi_datatype<T>(), data.size_bytes(), dest, tag, true);
  }

  template <class T>
  void recv(std::span<T> data, int source, int tag) {
    blocking_recv(data.data(), static_cast<int>(data.size()), mpi_datatype<T>(), source, tag);
  }

  // Sends `out` to dest while receiving `in` from source; deadlock-free in rings.
  template <class T>
  void sendrecv(std::span<const T> out, int dest, std::span<T> in, int source, int tag) {
    const std::size_t pad = pad_bytes(mpi_datatype<T>(), out.size(), kByRule);
    count(out.size_bytes() + pad);
    if (polls() || pad > 0) {
      std::vector<MPI_Request> both;
      irecv(in, source, tag, both);
      post_send(out.data(), static_cast<int>(out.size()), mpi_datatype<T>(), dest, tag, false, both, pad);
      wait_all(both, "MPI_Sendrecv");
      return;
    }
    Watch::Waiting waiting(watch_, "MPI_Sendrecv", to_parent(source));
    check_mpi(MPI_Sendrecv(out.data(), static_cast<int>(out.size()), mpi_datatype<T>(), to_parent(dest), tag, in.data(),
                           static_cast<int>(in.size()), mpi_datatype<T>(), to_parent(source), tag, comm_, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
  }

  // Non-blocking pairs for patterns where one rank talks to many (butterfly):
  // post every receive, then every send, then wait_all. Sends are counted when posted.
  // model_count: the elements a part of the vector stands for under --model-dim
  // (sender and receiver pass the same); kByRule: Padding::pad_bytes decides.
  template <class T>
  void isend(std::span<const T> data, int dest, int tag, std::vector<MPI_Request>& requests,
             std::size_t model_count = kByRule) {
    const std::size_t pad = pad_bytes(mpi_datatype<T>(), data.size(), model_count);
    count(data.size_bytes() + pad);
    post_send(data.data(), static_cast<int>(data.size()), mpi_datatype<T>(), dest, tag, false, requests, pad);
  }
  template <class T>
  void irecv(std::span<T> data, int source, int tag, std::vector<MPI_Request>& requests,
             std::size_t model_count = kByRule) {
    post_recv(data.data(), static_cast<int>(data.size()), mpi_datatype<T>(), data.size_bytes(), source, tag, requests,
              pad_bytes(mpi_datatype<T>(), data.size(), model_count));
  }
  // Completes and clears `requests` (posted on this Comm or one it was made
  // from). `what` names the wait when a stall is reported. Throws Stalled.
  void wait_all(std::vector<MPI_Request>& requests, const char* what = "a wait for messages") const;
  // Completes `request`.
  void wait(MPI_Request& request, const char* what) const;
  // Completes one of `requests` (its index; MPI_UNDEFINED when all are null).
  int wait_any(std::span<MPI_Request> requests, MPI_Status* status, const char* what) const;
  // Whether `request` has completed (MPI_Test); never blocks.
  bool test(MPI_Request& request, MPI_Status* status) const;

  // Every wait on this Comm and on views made of it afterwards reports to `watch`
  // (which must outlive them): --round-timeout, and what was in flight when a run
  // stalls.
  void set_watch(Watch* watch) { watch_ = watch; }
  Watch* watch() const { return watch_; }

  // The sub-group `members` (ranks of this Comm, in the order given, which becomes
  // the new rank order), for point-to-point traffic only: a view that talks on
  // this Comm's communicator and translates ranks, so making it costs nothing and
  // involves no other peer. Not an MPI communicator: under SMPI each of those has
  // rank tables sized by the whole world, held by every simulated rank for the
  // round (N^2 memory in the one simulating process). Its messages share this
  // Comm's tags; callers keep a group's traffic apart by membership (groups of a
  // round are disjoint) and by completing it within the round. Called by the
  // members only; this Comm must outlive the view. Throws Error if this peer is
  // not a member.
  Comm subgroup(std::span<const int> members) const;

  // The sub-group `members` (as for subgroup) as an MPI communicator of its own,
  // made by MPI_Comm_create_group: collective over the members only, so disjoint
  // groups form side by side. It shares this Comm's traffic counter and watch, and
  // is freed when it goes out of scope. Unlike a view it carries MPI collectives
  // (MPI_Allreduce). Throws Error if this peer is not a member, MpiError if MPI
  // fails.
  Comm create_group(std::span<const int> members) const;
  // Whether this is a communicator of its own (not a subgroup view).
  bool is_communicator() const { return !parent_rank_ && comm_ != MPI_COMM_NULL; }

  void barrier() const;

 private:
  Comm(MPI_Comm comm, std::shared_ptr<Traffic> traffic);
  int to_parent(int rank) const { return parent_rank_ ? (*parent_rank_)[static_cast<std::size_t>(rank)] : rank; }
  bool polls() const { return watch_ && watch_->polls(); }
  // pad > 0: the message goes as [data | pad bytes] from a staging buffer.
  void post_send(const void* data, int n, MPI_Datatype type, int dest, int tag, bool sync,
                 std::vector<MPI_Request>& requests, std::size_t pad = 0);
  void post_recv(void* data, int n, MPI_Datatype type, std::size_t bytes, int source, int tag,
                 std::vector<MPI_Request>& requests, std::size_t pad);
  std::size_t pad_bytes(MPI_Datatype type, std::size_t count, std::size_t model_count) const {
    return padding_ ? padding_->pad_bytes(type, count, model_count) : 0;
  }
  // The staged requests among `requests`, before a wait completes (and nulls) them.
  std::vector<MPI_Request> staged(std::span<const MPI_Request> requests) const;
  void finish_staged(std::span<const MPI_Request> handles) const;
  void blocking_send(const void* data, int n, MPI_Datatype type, std::size_t bytes, int dest, int tag, bool sync);
  void blocking_recv(void* data, int n, MPI_Datatype type, int source, int tag);
  void count(std::size_t bytes) {
    traffic_->bytes_sent += bytes;
    traffic_->messages_sent += 1;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = -1;
  int size_ = 0;
  bool owned_ = true;  // free comm_ when done (false for a subgroup view)
  // A subgroup view's rank -> rank in comm_ (null: the identity).
  std::shared_ptr<const std::vector<int>> parent_rank_;
  std::shared_ptr<Traffic> traffic_ = std::make_shared<Traffic>();
  std::shared_ptr<Padding> padding_;  // null: messages go as they are
  Watch* watch_ = nullptr;
};

// Whether every rank's MPI_Wtime() reads one clock: SMPI's simulated clock always,
// real MPI when MPI_WTIME_IS_GLOBAL says so.
bool clock_is_global(const Comm& comm);

// "openmpi", "mpich" or "smpi": which engine this binary was built for and runs on.
std::string engine_name();
// First line of MPI_Get_library_version.
std::string mpi_library_version();

}  // namespace avb
