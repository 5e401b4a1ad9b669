// Simulated failures (docs/failures.md).
//
// Debian's Open MPI has no ULFM and SMPI has none either, so a failure is a logical
// event: whether peer i is down in round t is a pure function of (seed, t, i). Every
// peer can evaluate it for every other peer — the simulation's stand-in for what a
// real system learns through timeouts — and because the draws do not depend on the
// protocol, all protocols see the same failures for the same seed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.hpp"
#include "core/rng.hpp"
#include "sim/availability.hpp"

namespace avb {

enum class FailureKind {
  transient,  // down in round t with probability p, independently per (t, peer)
  permanent,  // fails in round t with probability p and never returns
  churn,      // fails with probability p per round; after a down spell (each round
              // ending it with probability q, the join rate) a new peer takes the
              // slot, loading its state from a live peer
  trace,      // churn on the schedule of an availability trace (--availability)
};
inline constexpr EnumNames<FailureKind, 4> kFailureKindNames{
    "--failure",
    {{{FailureKind::transient, "transient"},
     {FailureKind::permanent, "permanent"},
     {FailureKind::churn, "churn"},
     {FailureKind::trace, "trace"}}}};

// Whether peers of this kind come back as new peers that load a live peer's state.
constexpr bool has_joiners(FailureKind kind) { return kind == FailureKind::churn || kind == FailureKind::trace; }

// What an averaging group does when some of its members are down (docs/failures.md).
enum class FailureSemantics {
  survivors,  // the alive members average among themselves; failed peers keep values
  abort,      // a group with any failed member keeps everyone's values this round
  partial,    // the failure happens mid all-reduce, with per-part outcomes
};
inline constexpr EnumNames<FailureSemantics, 3> kFailureSemanticsNames{
    "--on-failure",
    {{{FailureSemantics::survivors, "survivors"},
     {FailureSemantics::abort, "abort"},
     {FailureSemantics::partial, "partial"}}}};

FailureKind parse_failure_kind(std::string_view name);            // throws ConfigError

// Refuses --join-rate without --failure churn (its range is checked with the other
// failure settings, run/options.hpp). Which protocols
// run under churn is the catalog's (check_failure_support in protocols/protocol.hpp).
// Throws ConfigError naming the flag.
void check_churn(FailureKind kind, double join_rate);
FailureSemantics parse_failure_semantics(std::string_view name);  // throws ConfigError
std::string_view to_string(FailureKind kind);
std::string_view to_string(FailureSemantics semantics);

class FailureModel {
 public:
  // rate (and join_rate, churn only) in [0, 1]; seed is the trial's seed; peers
  // 0..n_peers-1. FailureKind::trace takes its schedule from `trace` (the rates
  // are unused; joiners' donors are still drawn from the seed) and throws
  // ConfigError when the trace is missing or names a peer >= n_peers.
  FailureModel(std::uint64_t seed, double rate, FailureKind kind, int n_peers, double join_rate = 0.0,
               std::shared_ptr<const Availability> trace = nullptr);

  // Is `peer` up in round t? Rounds start at 1; in round 0 (the initial state)
  // everyone is alive.
  bool alive(int round, int peer) const;

  // Churn and trace: does a new peer take `peer`'s slot in round t (up in t, down in t - 1)?
  // Always false for the other kinds.
  bool joined(int round, int peer) const;

  // Churn: the peer a joiner in round t loads its state from, uniform among the
  // peers up in both t - 1 and t (keyed by (t, joiner)); -1 when there is none.
  int donor(int round, int joiner) const;
  // Churn: donor(round, p) for every peer p, -1 where p did not join or has no
  // donor; empty for the other kinds. O(N), where N calls of donor() are O(N^2).
  std::vector<int> donors(int round) const;

  // The alive peers in round t, ascending, and how many there are.
  std::vector<int> alive_peers(int round) const;
  int count_alive(int round) const;
  // mask[i] = alive(round, i) for every peer, in one pass (the sequential engine's
  // per-round view); returns how many are alive.
  int alive_mask(int round, std::vector<std::uint8_t>& mask) const;
  int peers() const { return n_peers_; }

  // Heap bytes per peer that a model of this kind comes to hold over a run, for
  // the memory estimate: churn's lazily drawn spells (a vector per peer) and a
  // round's donor and candidate lists; a trace's lists (the trace itself apart);
  // permanent failures' rounds.
  static double bytes_per_peer(FailureKind kind);

  double rate() const { return rate_; }
  double join_rate() const { return join_rate_; }
  FailureKind kind() const { return kind_; }

  // For permanent failures: the round in which `peer` fails (it is down from then
  // on). Geometric with P(fails after t) = (1-p)^t, drawn by inversion from one
  // uniform so that evaluating it is O(1) for any round.
  std::int64_t permanent_failure_round(int peer) const;

 private:
  // Transient draws are 32-bit, eight peers to one Philox block: each peer
  // evaluates every peer's state every round, and packing makes that 8x cheaper.
  // P(down) = threshold / 2^32, within 2^-33 of the rate.
  std::uint32_t transient_draw(int round, int peer) const;

  // Churn and trace: `peer`'s alternating failure and join rounds, at least past
  // `round` (churn draws them lazily; a trace holds them all).
  std::span<const std::int64_t> switches(int peer, int round) const;
  // No peer ever fails: the fast path of every query.
  bool never_fails() const { return rate_ <= 0.0 && trace_ == nullptr; }

  Stream stream_;
  double rate_;
  FailureKind kind_;
  int n_peers_;
  double join_rate_ = 0.0;
  std::shared_ptr<const Availability> trace_;
  // Churn, per peer: the rounds at which it fails and a new peer joins, alternating
  // (F1, J1, F2, J2, ...), drawn lazily as rounds are asked about. Owned by this
  // object (one per rank and trial), like every other cache: no global state.
  mutable std::vector<std::vector<std::int64_t>> switches_;
  std::uint64_t threshold_;                    // transient: down iff draw < threshold
  std::vector<std::int64_t> failure_round_;    // permanent: computed once per trial
};

}  // namespace avb
