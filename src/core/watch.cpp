#include "core/watch.hpp"

#include "core/comm.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#ifdef AVB_ENGINE_SMPI
#include <simgrid/actor.h>
#include <xbt/sysdep.h>
#endif

namespace avb {

namespace {
constexpr int kReportTag = 1;
// Rank 0 waits this long for further reports once it has one, so that its line
// names every peer that is waited on, not only the first to give up.
constexpr double kCollectSeconds = 1.0;
// A peer other than rank 0 that has reported waits this many timeouts for rank 0
// to stop the job before it stops it itself (rank 0 may be the peer that hangs),
// plus a stagger per rank, so that the first to give up stops the others before
// they print lines of their own.
constexpr double kRootGraceTimeouts = 1.0;
constexpr double kStaggerSeconds = 2.0;

std::string list_ranks(const std::vector<int>& ranks) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(ranks.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > shown) text += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return text;
}
}  // namespace

Watch::Watch(MPI_Comm world, double timeout_seconds) : timeout_(timeout_seconds) {
  MPI_Comm_rank(world, &rank_);
  MPI_Comm_size(world, &size_);
#ifdef AVB_ENGINE_SMPI
  sg_actor_self_set_data(this);
#else
  polls_ = timeout_ > 0.0 && std::isfinite(timeout_);
  if (polls_) {
    check_mpi(MPI_Comm_dup(world, &alarm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(alarm_, MPI_ERRORS_RETURN);
  }
#endif
  started_ = MPI_Wtime();
}

Watch::~Watch() {
#ifdef AVB_ENGINE_SMPI
  if (sg_actor_self_get_data() == this) sg_actor_self_set_data(nullptr);
#endif
  // A stalled run ends in MPI_Abort, never here, so nothing is left on alarm_.
  if (alarm_ != MPI_COMM_NULL) MPI_Comm_free(&alarm_);
}

void Watch::start(int trial, const char* unit, int index) {
  trial_ = trial;
  unit_ = unit;
  index_ = index;
  posted_.clear();
  if (polls_) started_ = MPI_Wtime();
}

void Watch::note(MPI_Request request, int peer) {
  if (polls_) posted_.emplace_back(request, peer);
}

std::string Watch::describe() const {
  std::string text = trial_ < 0 ? std::string("before the first trial")
                                : "trial " + std::to_string(trial_) + ", " + unit_ + " " + std::to_string(index_);
  if (what_) {
    text += ": peer " + std::to_string(rank_) + " waits in " + what_;
    if (peer_ >= 0) text += " on peer " + std::to_string(peer_);
  }
  return text;
}

bool Watch::done(std::span<MPI_Request> requests, bool any, int& index, MPI_Status* status) {
  int flag = 0;
  const int n = static_cast<int>(requests.size());
  if (any)
    check_mpi(MPI_Testany(n, requests.data(), &index, &flag, status ? status : MPI_STATUS_IGNORE), "MPI_Testany");
  else
    check_mpi(MPI_Testall(n, requests.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
  return flag != 0;
}

void Watch::wait_all(std::span<MPI_Request> requests, const char* what, int peer) {
  what_ = what;
  peer_ = peer;
  if (!polls_) {
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  } else {
    int index = 0;
    for (long spin = 0; !done(requests, false, index, nullptr); ++spin) {
      // No sched_yield here: MPI_Test* progresses (and yields, when Open MPI runs
      // oversubscribed) like the blocking waits do; one more yield per poll made
      // every wait cost a scheduler round on a busy machine.
      if (spin % 256 == 0) {
        if (rank_ == 0) check_reports(requests);
        if (MPI_Wtime() - started_ > timeout_) give_up(requests);
      }
    }
  }
  what_ = nullptr;
}

int Watch::wait_any(std::span<MPI_Request> requests, MPI_Status* status, const char* what, int peer) {
  what_ = what;
  peer_ = peer;
  int index = MPI_UNDEFINED;
  if (!polls_) {
    check_mpi(MPI_Waitany(static_cast<int>(requests.size()), requests.data(), &index,
                          status ? status : MPI_STATUS_IGNORE),
              "MPI_Waitany");
  } else {
    for (long spin = 0; !done(requests, true, index, status); ++spin) {
      if (spin % 256 == 0) {
        if (rank_ == 0) check_reports(requests);
        if (MPI_Wtime() - started_ > timeout_) give_up(requests);
      }
    }
  }
  what_ = nullptr;
  return index;
}

std::vector<int> Watch::waited_on(std::span<MPI_Request> requests) const {
  std::vector<int> peers;
  if (peer_ >= 0) peers.push_back(peer_);
  for (MPI_Request r : requests) {
    if (r == MPI_REQUEST_NULL) continue;
    for (const auto& [posted, p] : posted_)
      if (posted == r) peers.push_back(p);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

std::string Watch::report(std::span<MPI_Request> requests) const {
  std::ostringstream text;  // "rank|what|peer peer ...": parsed by rank 0
  text << rank_ << '|' << describe() << '|';
  for (int p : waited_on(requests)) text << p << ' ';
  return text.str();
}

void Watch::give_up(std::span<MPI_Request> requests) {
  if (rank_ == 0) throw_collected({report(requests)});
  // Tell rank 0, then give it time to stop the job with the trace saved.
  const std::string text = report(requests);
  MPI_Request sent = MPI_REQUEST_NULL;
  MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, kReportTag, alarm_, &sent);
  const double deadline = MPI_Wtime() + kRootGraceTimeouts * timeout_ + kStaggerSeconds * (rank_ - 1);
  while (MPI_Wtime() < deadline) {
    int flag = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE);
    sched_yield();
  }
  throw Stalled("--round-timeout: " + describe() + " for more than " + std::to_string(static_cast<long>(timeout_)) +
                " s, and peer 0 did not answer (it may be the peer that stopped)");
}

void Watch::check_reports(std::span<MPI_Request> requests) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, alarm_, &flag, &status);
  // Rank 0 is waiting too: its own wait counts, so that it is never named as a
  // peer that did not report, and the peers it waits on are named.
  if (flag) throw_collected({report(requests)});
}

void Watch::throw_collected(std::vector<std::string> reports) {
  // Collects the reports of every peer that gave up, for a moment.
  const double until = MPI_Wtime() + kCollectSeconds;
  while (MPI_Wtime() < until) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, alarm_, &flag, &status);
    if (!flag) {
      sched_yield();
      continue;
    }
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    std::string text(static_cast<std::size_t>(length), '\0');
    MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, kReportTag, alarm_, MPI_STATUS_IGNORE);
    reports.push_back(std::move(text));
  }
  // Peers that reported are alive and waiting; the peers they wait on that did not
  // report are the ones that stopped.
  std::vector<int> reporters, waited;
  std::string first;
  for (const std::string& r : reports) {
    std::istringstream in(r);
    std::string rank, where, peers;
    std::getline(in, rank, '|');
    std::getline(in, where, '|');
    std::getline(in, peers);
    reporters.push_back(std::atoi(rank.c_str()));
    if (first.empty()) first = where;
    std::istringstream list(peers);
    for (int p; list >> p;) waited.push_back(p);
  }
  std::sort(reporters.begin(), reporters.end());
  std::sort(waited.begin(), waited.end());
  waited.erase(std::unique(waited.begin(), waited.end()), waited.end());
  std::vector<int> silent;
  for (int p : waited)
    if (!std::binary_search(reporters.begin(), reporters.end(), p)) silent.push_back(p);
  // Collective waits (a communicator being made) name no peer: then every peer
  // that did not report is a suspect, though some may only be short of their own
  // timeout.
  const bool collective = waited.empty();
  if (collective)
    for (int p = 0; p < size_; ++p)
      if (!std::binary_search(reporters.begin(), reporters.end(), p)) silent.push_back(p);
  std::string line = "--round-timeout: no progress for " + std::to_string(static_cast<long>(timeout_)) + " s (" +
                     (first.empty() ? describe() : first) + ")";
  line += "; " + std::to_string(reporters.size()) + " of " + std::to_string(size_) + " peers waiting";
  if (!silent.empty())
    line += ", on peer(s) " + list_ranks(silent) + " that did not report (stopped or hung" +
            (collective ? ", or not yet at their own timeout)" : ")");
  else if (!waited.empty())
    line += ", on peer(s) " + list_ranks(waited);
  throw Stalled(line);
}

std::string describe_blocked_peers() {
#ifdef AVB_ENGINE_SMPI
  const std::size_t n = sg_actor_count();
  sg_actor_t* actors = sg_actor_list();
  std::map<std::string, std::vector<int>> by_wait;  // "waits in X on peer Y" -> peers
  std::string where;
  std::size_t blocked = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto* watch = static_cast<const Watch*>(sg_actor_get_data(actors[i]));
    if (!watch) continue;
    ++blocked;
    const std::string text = watch->describe();
    const std::size_t colon = text.find(": peer ");
    if (where.empty()) where = text.substr(0, colon);
    if (colon == std::string::npos) continue;
    // "peer R waits in X on peer Y": group by "X on peer Y".
    const std::string rest = text.substr(colon + 7);
    const std::size_t space = rest.find(' ');
    by_wait[rest.substr(space + 1)].push_back(std::atoi(rest.c_str()));
  }
  xbt_free(actors);
  std::string line = std::to_string(blocked) + " peers blocked (" + (where.empty() ? "no trial" : where) + ")";
  int shown = 0;
  for (auto& [what, peers] : by_wait) {
    if (shown++ == 4) {
      line += "; ...";
      break;
    }
    std::sort(peers.begin(), peers.end());
    line += "; peer(s) " + list_ranks(peers) + " " + what;
  }
  return line;
#else
  return {};
#endif
}

}  // namespace avb
