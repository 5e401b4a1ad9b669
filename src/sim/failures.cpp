#include "sim/failures.hpp"

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace avb {

FailureKind parse_failure_kind(std::string_view name) {
  if (name == "transient") return FailureKind::transient;
  if (name == "permanent") return FailureKind::permanent;
  throw ConfigError("--failure: '" + std::string(name) + "' is not one of {transient, permanent}");
}

FailureSemantics parse_failure_semantics(std::string_view name) {
  if (name == "survivors") return FailureSemantics::survivors;
  if (name == "abort") return FailureSemantics::abort;
  if (name == "partial") return FailureSemantics::partial;
  throw ConfigError("--on-failure: '" + std::string(name) + "' is not one of {survivors, abort, partial}");
}

std::string_view to_string(FailureKind kind) {
  return kind == FailureKind::transient ? "transient" : "permanent";
}

std::string_view to_string(FailureSemantics semantics) {
  switch (semantics) {
    case FailureSemantics::survivors: return "survivors";
    case FailureSemantics::abort: return "abort";
    case FailureSemantics::partial: return "partial";
  }
  return "?";
}

FailureModel::FailureModel(std::uint64_t seed, double rate, FailureKind kind, int n_peers)
    : stream_(seed, StreamId::failures), rate_(rate), kind_(kind), n_peers_(n_peers) {
  if (!(rate >= 0.0 && rate <= 1.0)) throw ConfigError("--fail-rate: must be a number in [0, 1]");
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

bool FailureModel::alive(int round, int peer) const {
  if (round <= 0 || rate_ <= 0.0) return true;
  if (kind_ == FailureKind::permanent) {
    const bool known = peer >= 0 && peer < n_peers_;
    return round < (known ? failure_round_[static_cast<std::size_t>(peer)] : permanent_failure_round(peer));
  }
  return transient_draw(round, peer) >= threshold_;
}

std::vector<int> FailureModel::alive_peers(int round) const {
  std::vector<int> peers;
  peers.reserve(static_cast<std::size_t>(n_peers_));
  if (round <= 0 || rate_ <= 0.0 || kind_ == FailureKind::permanent) {
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

int FailureModel::count_alive(int round) const { return static_cast<int>(alive_peers(round).size()); }

}  // namespace avb
