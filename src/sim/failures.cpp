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

FailureModel::FailureModel(std::uint64_t seed, double rate, FailureKind kind)
    : stream_(seed, StreamId::failures), rate_(rate), kind_(kind) {
  if (!(rate >= 0.0 && rate <= 1.0)) throw ConfigError("--fail-rate: must be in [0, 1]");
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
  if (kind_ == FailureKind::permanent) return round < permanent_failure_round(peer);
  return stream_.uniform(static_cast<std::uint64_t>(round), static_cast<std::uint64_t>(peer), 0) >= rate_;
}

std::vector<int> FailureModel::alive_peers(int round, int n) const {
  std::vector<int> peers;
  peers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    if (alive(round, i)) peers.push_back(i);
  return peers;
}

int FailureModel::count_alive(int round, int n) const {
  int count = 0;
  for (int i = 0; i < n; ++i) count += alive(round, i) ? 1 : 0;
  return count;
}

}  // namespace avb
