#include "sim/fluid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace avb {

namespace {

constexpr double kBack = 0.05;  // SimGrid's network/crosstraffic share
constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

int FluidNetwork::add_link(double capacity) {
  capacity_.push_back(capacity);
  users_.emplace_back();
  return static_cast<int>(capacity_.size()) - 1;
}

void FluidNetwork::add_flow(Flow flow) { flows_.push_back(std::move(flow)); }

void FluidNetwork::clear() {
  flows_.clear();
  for (auto& u : users_) u.clear();
}

// Weighted max-min by progressive filling: raise a common level L, each unfixed
// moving flow at L / penalty, until a link fills (its flows are fixed there) or a
// flow reaches its bound (it is fixed at its bound).
void FluidNetwork::solve() {
  const std::size_t n = flows_.size();
  room_ = capacity_;
  weight_.assign(capacity_.size(), 0.0);
  active_.assign(capacity_.size(), 0);
  fixed_.assign(n, 0);
  std::size_t unfixed = 0;
  for (std::size_t f = 0; f < n; ++f) {
    rate_[f] = 0.0;
    if (!moving_[f] || done_[f]) {
      fixed_[f] = 1;
      continue;
    }
    ++unfixed;
    for (int l : flows_[f].route) {
      weight_[static_cast<std::size_t>(l)] += 1 / flows_[f].penalty;
      ++active_[static_cast<std::size_t>(l)];
    }
    for (int l : flows_[f].back) {
      weight_[static_cast<std::size_t>(l)] += kBack / flows_[f].penalty;
      ++active_[static_cast<std::size_t>(l)];
    }
  }
  auto fix = [&](std::size_t f, double rate) {
    fixed_[f] = 1;
    --unfixed;
    rate_[f] = rate;
    for (int l : flows_[f].route) {
      room_[static_cast<std::size_t>(l)] -= rate;
      weight_[static_cast<std::size_t>(l)] -= 1 / flows_[f].penalty;
      --active_[static_cast<std::size_t>(l)];
    }
    for (int l : flows_[f].back) {
      room_[static_cast<std::size_t>(l)] -= kBack * rate;
      weight_[static_cast<std::size_t>(l)] -= kBack / flows_[f].penalty;
      --active_[static_cast<std::size_t>(l)];
    }
  };
  while (unfixed > 0) {
    double level = kInfinity;
    for (std::size_t f = 0; f < n; ++f)
      if (!fixed_[f]) level = std::min(level, flows_[f].bound * flows_[f].penalty);
    for (std::size_t l = 0; l < capacity_.size(); ++l)
      if (active_[l] > 0) level = std::min(level, std::max(0.0, room_[l]) / weight_[l]);
    // Fix the flows at their bound, then those on every link that is now full.
    const double tolerance = 1e-12 * std::max(1.0, level);
    for (std::size_t f = 0; f < n; ++f)
      if (!fixed_[f] && flows_[f].bound * flows_[f].penalty <= level + tolerance) fix(f, flows_[f].bound);
    for (std::size_t l = 0; l < capacity_.size(); ++l) {
      if (active_[l] == 0 || std::max(0.0, room_[l]) / weight_[l] > level + tolerance) continue;
      for (const auto& [f, use] : users_[l])
        if (!fixed_[static_cast<std::size_t>(f)])
          fix(static_cast<std::size_t>(f), std::min(flows_[static_cast<std::size_t>(f)].bound, level / flows_[static_cast<std::size_t>(f)].penalty));
    }
  }
}

double FluidNetwork::run() {
  const std::size_t n = flows_.size();
  for (auto& u : users_) u.clear();
  for (std::size_t f = 0; f < n; ++f) {
    for (int l : flows_[f].route) users_[static_cast<std::size_t>(l)].emplace_back(static_cast<int>(f), 1.0);
    for (int l : flows_[f].back) users_[static_cast<std::size_t>(l)].emplace_back(static_cast<int>(f), kBack);
  }
  left_.resize(n);
  rate_.assign(n, 0.0);
  moving_.assign(n, 0);
  done_.assign(n, 0);
  end_.assign(n, 0.0);
  for (std::size_t f = 0; f < n; ++f) left_[f] = flows_[f].bytes;
  auto moves_at = [&](std::size_t f) { return flows_[f].start + flows_[f].latency; };
  double now = 0.0;
  std::size_t remaining = n;
  while (remaining > 0) {
    // Whoever's latency is paid by now moves; whoever moved all its bytes is done.
    for (std::size_t f = 0; f < n; ++f) {
      if (done_[f]) continue;
      if (!moving_[f] && moves_at(f) <= now * (1 + 1e-12)) moving_[f] = 1;
      if (moving_[f] && left_[f] <= 1e-9 * std::max(1.0, flows_[f].bytes)) {
        done_[f] = 1;
        end_[f] = now;
        --remaining;
      }
    }
    if (remaining == 0) break;
    solve();
    double next = kInfinity;
    for (std::size_t f = 0; f < n; ++f) {
      if (done_[f]) continue;
      if (!moving_[f]) next = std::min(next, moves_at(f));
      else if (rate_[f] > 0) next = std::min(next, now + left_[f] / (rate_[f] * flows_[f].factor));
    }
    if (!(next < kInfinity)) {  // nothing can move: a zero-capacity link
      for (std::size_t f = 0; f < n; ++f)
        if (!done_[f]) end_[f] = kInfinity;
      now = kInfinity;
      break;
    }
    const double dt = next - now;
    for (std::size_t f = 0; f < n; ++f)
      if (moving_[f] && !done_[f]) left_[f] = std::max(0.0, left_[f] - rate_[f] * flows_[f].factor * dt);
    now = next;
  }
  clear();
  return now;
}

}  // namespace avb
