// When each peer's work of a round is done, and how long a group waits for it
// (docs/failures.md, waiting policies).
//
// A round's work (--compute-flops) takes peer i in round t
//   flops x straggler factor(i) x exp(sigma z(t, i)) / speed(i)
// seconds from the round's start: the straggler factor is sim/stragglers.hpp's,
// z(t, i) a standard normal keyed by (trial seed, t, i) (--straggler-sigma), and
// speed(i) the host speed of the platform the run describes. Every engine computes
// these arrivals from the same keys, so a waiting policy cuts the same peers on
// every engine and the values stay bit-identical; only the time is the engine's.
//
// A group protocol's group waits for its members' work by a policy:
//   all       every alive member (the default): the group proceeds with the last;
//   quorum    once ceil(q m) of its m alive members have arrived;
//   deadline  at median + k MAD of its members' arrivals in the previous
//             kDeadlineHistory rounds (at least --deadline-floor seconds), or
//             once everyone has arrived if that is earlier.
// A member that arrives after the group proceeds is late: it counts as failed for
// the round under the protocol's failure semantics, except that nobody waits to
// detect it (the group knows whom it left behind). A late peer drops its work at
// the moment its group proceeds, so the round charges it up to then.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"
#include "core/settings.hpp"
#include "sim/stragglers.hpp"

namespace avb {

enum class WaitPolicy { all, quorum, deadline };
inline constexpr EnumNames<WaitPolicy, 3> kWaitPolicyNames{
    "--wait", {{{WaitPolicy::all, "all"}, {WaitPolicy::quorum, "quorum"}, {WaitPolicy::deadline, "deadline"}}}};

struct WaitSpec {
  WaitPolicy policy = WaitPolicy::all;
  double quorum = 0.75;         // --quorum: the fraction of a group's alive members
  double deadline_k = 3.0;      // --deadline-k: MADs above the median
  double deadline_floor = 0.0;  // --deadline-floor: seconds
};

// The waiting settings' declarations (core/settings.hpp's visitor), which the
// protocols' table visits and the catalog rows of the group protocols take
// whole: a new waiting setting is a field and a line here.
template <class S, class Visitor>
  requires std::same_as<std::remove_const_t<S>, WaitSpec>
void for_each_setting(S& s, Visitor&& v) {
  v.word("--wait", s.policy, kWaitPolicyNames,
         "averaging_bench only: how long a group waits for its members' work (--compute-flops): all, quorum (until "
         "--quorum of them have arrived) or deadline (median + --deadline-k MADs of their recent arrivals, at least "
         "--deadline-floor); late members count as failed for the round (docs/failures.md)",
         true);
  v.real("--quorum", s.quorum, interval(0, 1, true),
         "--wait quorum: the fraction of a group's alive members it waits for, in (0, 1]",
         s.policy == WaitPolicy::quorum);
  v.real("--deadline-k", s.deadline_k, at_least(0), "--wait deadline: MADs above the median of recent arrivals, >= 0",
         s.policy == WaitPolicy::deadline);
  v.real("--deadline-floor", s.deadline_floor, at_least(0, " (seconds)"),
         "--wait deadline: the shortest deadline in seconds, >= 0", s.policy == WaitPolicy::deadline);
}

// The rounds of arrivals the adaptive deadline looks back on (round 0, before the
// first, counts as one: a warm-up whose arrivals are drawn like any other's).
inline constexpr int kDeadlineHistory = 4;


// The largest factor exp(sigma z) can take: the keyed normal is a Box-Muller draw
// from 53-bit uniforms, so |z| < 8.6.
double max_work_jitter(double sigma);

class Arrivals {
 public:
  // `speed(i)`: host i's speed in flops/s.
  Arrivals(std::uint64_t trial_seed, const StragglerSpec& stragglers, double flops, WaitSpec wait,
           std::function<double(int)> speed);

  // The factor peer's work of round t is slowed by: its straggler factor times
  // its lognormal jitter (1 and 1 without stragglers and sigma).
  double work_factor(int t, int peer) const;
  // Seconds from round t's start until peer's work is done.
  double at(int t, int peer) const;
  const WaitSpec& wait() const { return wait_; }

  // One group in round t: its alive members (any order) and which of them are late.
  struct Cut {
    double proceed = 0.0;  // seconds from the round's start until the group goes on
    int late = 0;          // how many members are late
  };
  // late[i] = 1 for the late members[i]; resized to members.size(). `known`: every
  // peer's at(t, peer), indexed by peer, when the caller has them already (the
  // sequential engine's round); empty: computed here.
  Cut cut(int t, std::span<const int> members, std::vector<std::uint8_t>& late,
          std::span<const double> known = {}) const;

 private:
  double deadline(int t, std::span<const int> members) const;

  Stragglers stragglers_;
  double sigma_;
  std::uint64_t seed_;
  double flops_;
  WaitSpec wait_;
  std::function<double(int)> speed_;
  mutable std::vector<double> scratch_, arrived_, sorted_;  // reused from cut to cut
};

}  // namespace avb
