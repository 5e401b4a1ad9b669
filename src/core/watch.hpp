// Watch: what a peer is waiting for, and how long it may wait (--round-timeout).
//
// A peer that stops (SIGSTOP, a hung node) or a protocol that deadlocks would make
// every other peer wait for ever inside MPI. Every wait of a run goes through a
// Watch (Comm routes its waits here), which knows the trial and round and the
// peers it waits on:
//  - On a real MPI library, a wait polls its requests and gives up once the round
//    has lasted longer than the timeout. A peer other than rank 0 that gives up
//    tells rank 0 so on a communicator of its own, and rank 0, which also watches
//    for such reports while it waits, throws Stalled with one line naming the round
//    and the peers waited on, so that the app saves the trace and stops the job.
//  - Under SMPI waits block as usual: SimGrid itself notices when no simulated peer
//    can move, and describe_blocked_peers() reads every peer's Watch to say what
//    was in flight.
#pragma once

#include <mpi.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace avb {

// No progress within the round timeout; what() is the one line for the user.
class Stalled : public Error {
 public:
  using Error::Error;
};

class Watch {
 public:
  // Collective over `world`. timeout_seconds <= 0: waits never time out. Under
  // SMPI the timeout is not used (see above).
  Watch(MPI_Comm world, double timeout_seconds);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // The run made progress: a new round (or SGD step) of `trial` starts now.
  // `unit` names what `index` counts ("round", "step").
  void start(int trial, const char* unit, int index);

  // Waits for every request, or for one of them (its index; MPI_UNDEFINED when all
  // are null). `what` names the operation and `peer` the world rank waited on (-1:
  // see the requests noted with note()). Throws Stalled.
  void wait_all(std::span<MPI_Request> requests, const char* what, int peer = -1);
  int wait_any(std::span<MPI_Request> requests, MPI_Status* status, const char* what, int peer = -1);
  // The world rank a request just posted talks to, for the message of a stall.
  void note(MPI_Request request, int peer);

  // Marks a blocking MPI call in progress, for describe() (RAII; w may be null).
  class Waiting {
   public:
    Waiting(Watch* w, const char* what, int peer) : w_(w) {
      if (w_) w_->what_ = what, w_->peer_ = peer;
    }
    ~Waiting() {
      if (w_) w_->what_ = nullptr;
    }
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    Watch* w_;
  };

  // "trial 0, round 7: peer 2 waits in MPI_Recv on peer 3" (for reports).
  std::string describe() const;
  double timeout() const { return timeout_; }
  bool polls() const { return polls_; }

 private:
  bool done(std::span<MPI_Request> requests, bool any, int& index, MPI_Status* status);
  [[noreturn]] void give_up(std::span<MPI_Request> requests);
  void check_reports(std::span<MPI_Request> requests);
  std::string report(std::span<MPI_Request> requests) const;
  [[noreturn]] void throw_collected(std::vector<std::string> reports);
  std::vector<int> waited_on(std::span<MPI_Request> requests) const;

  double timeout_ = 0.0;
  bool polls_ = false;    // real MPI with a timeout
  MPI_Comm alarm_ = MPI_COMM_NULL;  // rank 0 hears of stalls here
  int rank_ = 0, size_ = 1;
  int trial_ = -1, index_ = 0;
  const char* unit_ = "round";
  double started_ = 0.0;
  const char* what_ = nullptr;  // the wait in progress (nullptr: none)
  int peer_ = -1;
  std::vector<std::pair<MPI_Request, int>> posted_;  // this round's requests and their peers
};

// SMPI only: one line on what the simulated peers were blocked in when SimGrid
// found that none of them could move, from each peer's Watch. Empty elsewhere.
std::string describe_blocked_peers();

}  // namespace avb
