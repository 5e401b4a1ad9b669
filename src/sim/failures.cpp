#include "sim/failures.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "core/error.hpp"

namespace avb {

FailureKind parse_failure_kind(std::string_view name) { return kFailureKindNames.parse(name); }

void check_churn(FailureKind kind, double join_rate) {
  if (kind != FailureKind::churn && join_rate != 0.0)
    throw ConfigError("--join-rate: applies to --failure churn only");
}

FailureSemantics parse_failure_semantics(std::string_view name) { return kFailureSemanticsNames.parse(name); }

std::string_view to_string(FailureKind kind) { return kFailureKindNames.name(kind); }

std::string_view to_string(FailureSemantics semantics) { return kFailureSemanticsNames.name(semantics); }

FailureModel::FailureModel(std::uint64_t seed, double rate, FailureKind kind, int n_peers, double join_rate,
                           std::shared_ptr<const Availability> trace)
    : stream_(seed, StreamId::failures), rate_(rate), kind_(kind), n_peers_(n_peers), join_rate_(join_rate) {
  if (!(rate >= 0.0 && rate <= 1.0)) throw ConfigError("--fail-rate: must be a number in [0, 1]");
  if (!(join_rate >= 0.0 && join_rate <= 1.0)) throw ConfigError("--join-rate: must be a number in [0, 1]");
  if (kind_ == FailureKind::trace) {
    if (trace == nullptr) throw ConfigError("--failure: trace needs --availability FILE");
    if (trace->peers() > n_peers)
      throw ConfigError("--availability: names peer " + std::to_string(trace->peers() - 1) + ", but the run has " +
                        std::to_string(n_peers) + " peers (0.." + std::to_string(n_peers - 1) + ")");
    trace_ = std::move(trace);
  }
  if (kind_ == FailureKind::churn) switches_.resize(static_cast<std::size_t>(n_peers));
  threshold_ = static_cast<std::uint64_t>(std::llround(std::ldexp(rate, 32)));
  if (kind_ == FailureKind::permanent) {
    failure_round_.resize(static_cast<std::size_t>(n_peers));
    for (int i = 0; i < n_peers; ++i) failure_round_[static_cast<std::size_t>(i)] = permanent_failure_round(i);
  }
}

std::uint32_t FailureModel::transient_draw(int round, int peer) const {
  const auto block = stream_.block(static_cast<std::uint64_t>(round), static_cast<std::uint64_t>(peer / 8), 0);
  const std::uint64_t word = block.w[(peer % 8) / 2];
  return static_cast<std::uint32_t>(peer % 2 == 0 ? word : word >> 32);
}

std::int64_t FailureModel::permanent_failure_round(int peer) const {
  if (rate_ <= 0.0) return std::numeric_limits<std::int64_t>::max();
  if (rate_ >= 1.0) return 1;
  // Round 0 of the failure stream is never used by transient draws (rounds start
  // at 1), so it holds the one draw of a permanent failure.
  const double u = stream_.uniform_open0(0, static_cast<std::uint64_t>(peer), 0);
  const double rounds = std::floor(std::log(u) / std::log1p(-rate_));
  if (rounds >= 9.0e18) return std::numeric_limits<std::int64_t>::max();
  return 1 + static_cast<std::int64_t>(rounds);
}

namespace {

// A geometric count >= 1 with success probability p, from a uniform u in (0, 1]:
// 1 + floor(log u / log(1 - p)); "never" (int64 max) when p = 0.
std::int64_t geometric(double u, double p) {
  if (p <= 0.0) return std::numeric_limits<std::int64_t>::max();
  if (p >= 1.0) return 1;
  const double k = std::floor(std::log(u) / std::log1p(-p));
  return k >= 9.0e18 ? std::numeric_limits<std::int64_t>::max() : 1 + static_cast<std::int64_t>(k);
}

std::int64_t add_rounds(std::int64_t a, std::int64_t b) {
  const std::int64_t never = std::numeric_limits<std::int64_t>::max();
  return (a == never || b == never || a > never - b) ? never : a + b;
}

}  // namespace

std::span<const std::int64_t> FailureModel::switches(int peer, int round) const {
  if (trace_ != nullptr) return trace_->switches(peer);
  auto& s = switches_[static_cast<std::size_t>(peer)];
  const Stream churn(stream_.seed(), StreamId::churn);
  // Period k: up from its start (round 0, or the k-th join) until the failure,
  // then down until the next join. A peer cannot fail in the round it joins.
  while (s.empty() || (s.back() <= round && s.back() != std::numeric_limits<std::int64_t>::max())) {
    const auto k = static_cast<std::uint64_t>(s.size() / 2);
    const std::int64_t start = s.empty() ? 0 : s.back();
    const auto p = static_cast<std::uint64_t>(peer);
    const std::int64_t fails = add_rounds(start, geometric(churn.uniform_open0(k, p, 0), rate_));
    s.push_back(fails);
    s.push_back(add_rounds(fails, geometric(churn.uniform_open0(k, p, 1), join_rate_)));
  }
  return s;
}

bool FailureModel::joined(int round, int peer) const {
  if (!has_joiners(kind_) || round <= 0 || never_fails() || peer < 0 || peer >= n_peers_) return false;
  const auto s = switches(peer, round);
  for (std::size_t i = 1; i < s.size() && s[i - 1] <= round; i += 2)
    if (s[i] == round) return true;
  return false;
}

namespace {

// The peers a joiner in round t may load from: up in both t - 1 and t, not joining.
// A joiner was down in t - 1, so the list is the same for every joiner.
std::vector<int> donor_candidates(const FailureModel& f, int round) {
  std::vector<int> candidates;
  for (int p = 0; p < f.peers(); ++p)
    if (f.alive(round - 1, p) && f.alive(round, p) && !f.joined(round, p)) candidates.push_back(p);
  return candidates;
}

int pick_donor(const Stream& churn, const std::vector<int>& candidates, int round, int joiner) {
  if (candidates.empty()) return -1;
  const auto pick = churn.below(candidates.size(), static_cast<std::uint64_t>(round), static_cast<std::uint64_t>(joiner), 2);
  return candidates[static_cast<std::size_t>(pick)];
}

}  // namespace

int FailureModel::donor(int round, int joiner) const {
  if (!joined(round, joiner)) return -1;
  return pick_donor(Stream(stream_.seed(), StreamId::churn), donor_candidates(*this, round), round, joiner);
}

std::vector<int> FailureModel::donors(int round) const {
  if (!has_joiners(kind_) || round <= 0 || never_fails()) return {};
  std::vector<int> result(static_cast<std::size_t>(n_peers_), -1);
  std::vector<int> joiners;
  for (int p = 0; p < n_peers_; ++p)
    if (joined(round, p)) joiners.push_back(p);
  if (joiners.empty()) return result;
  const std::vector<int> candidates = donor_candidates(*this, round);
  const Stream churn(stream_.seed(), StreamId::churn);
  for (int p : joiners) result[static_cast<std::size_t>(p)] = pick_donor(churn, candidates, round, p);
  return result;
}

bool FailureModel::alive(int round, int peer) const {
  if (round <= 0 || never_fails()) return true;
  if (has_joiners(kind_)) {
    if (peer < 0 || peer >= n_peers_) return true;
    const auto s = switches(peer, round);
    // Up before the first failure and from each join to the next failure.
    for (std::size_t i = 0; i < s.size(); i += 2) {
      if (round < s[i]) return true;
      if (round < s[i + 1]) return false;
    }
    return true;
  }
  if (kind_ == FailureKind::permanent) {
    const bool known = peer >= 0 && peer < n_peers_;
    return round < (known ? failure_round_[static_cast<std::size_t>(peer)] : permanent_failure_round(peer));
  }
  return transient_draw(round, peer) >= threshold_;
}

std::vector<int> FailureModel::alive_peers(int round) const {
  std::vector<int> peers;
  peers.reserve(static_cast<std::size_t>(n_peers_));
  if (round <= 0 || never_fails() || kind_ != FailureKind::transient) {
    for (int i = 0; i < n_peers_; ++i)
      if (alive(round, i)) peers.push_back(i);
    return peers;
  }
  // One Philox block serves eight consecutive peers.
  for (int base = 0; base < n_peers_; base += 8) {
    const auto block = stream_.block(static_cast<std::uint64_t>(round), static_cast<std::uint64_t>(base / 8), 0);
    for (int lane = 0; lane < 8 && base + lane < n_peers_; ++lane) {
      const std::uint64_t word = block.w[lane / 2];
      const auto draw = static_cast<std::uint32_t>(lane % 2 == 0 ? word : word >> 32);
      if (draw >= threshold_) peers.push_back(base + lane);
    }
  }
  return peers;
}

int FailureModel::alive_mask(int round, std::vector<std::uint8_t>& mask) const {
  mask.resize(static_cast<std::size_t>(n_peers_));
  int count = 0;
  if (round <= 0 || never_fails() || kind_ != FailureKind::transient) {
    for (int i = 0; i < n_peers_; ++i) count += mask[static_cast<std::size_t>(i)] = alive(round, i) ? 1 : 0;
    return count;
  }
  for (int base = 0; base < n_peers_; base += 8) {
    const auto block = stream_.block(static_cast<std::uint64_t>(round), static_cast<std::uint64_t>(base / 8), 0);
    for (int lane = 0; lane < 8 && base + lane < n_peers_; ++lane) {
      const auto draw = static_cast<std::uint32_t>(block.w[lane / 2] >> (lane % 2 == 0 ? 0 : 32));
      count += mask[static_cast<std::size_t>(base + lane)] = draw >= threshold_ ? 1 : 0;
    }
  }
  return count;
}

double FailureModel::bytes_per_peer(FailureKind kind) {
  switch (kind) {
    case FailureKind::transient: return 0;
    case FailureKind::permanent: return sizeof(std::int64_t);
    // A vector per peer, its heap block (two switches and malloc's header: 32 bytes),
    // and an int each in a round's donor and candidate lists.
    case FailureKind::churn: return sizeof(std::vector<std::int64_t>) + 32 + 2 * sizeof(int);
    case FailureKind::trace: return 2 * sizeof(int);
  }
  return 0;
}

int FailureModel::count_alive(int round) const { return static_cast<int>(alive_peers(round).size()); }

}  // namespace avb
