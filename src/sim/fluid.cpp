#include "sim/fluid.hpp"

#include "core/error.hpp"

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

int FluidNetwork::add_flow(Flow flow) {
  flows_.push_back(std::move(flow));
  return static_cast<int>(flows_.size()) - 1;
}

void FluidNetwork::clear() {
  flows_.clear();
  for (auto& u : users_) u.clear();
}

// The moving flows' links (links_), each with its moving users, its weight (the
// users' usage / penalty), how many use it, and its whole capacity left.
void FluidNetwork::gather() {
  for (int l : links_) {
    const auto ul = static_cast<std::size_t>(l);
    users_[ul].clear();
    weight_[ul] = 0.0;
    active_[ul] = 0;
  }
  links_.clear();
  auto use = [&](int l, int f, double weight) {
    const auto ul = static_cast<std::size_t>(l);
    if (active_[ul]++ == 0) {
      links_.push_back(l);
      room_[ul] = capacity_[ul];
    }
    weight_[ul] += weight;
    users_[ul].push_back(f);
  };
  for (int f : moving_) {
    const Flow& flow = flows_[static_cast<std::size_t>(f)];
    fixed_[static_cast<std::size_t>(f)] = 0;
    rate_[static_cast<std::size_t>(f)] = 0.0;
    for (int l : flow.route) use(l, f, 1 / flow.penalty);
    for (int l : flow.back) use(l, f, kBack / flow.penalty);
  }
}

// Weighted max-min by progressive filling over the moving flows: raise a common
// level L, each unfixed flow at L / penalty, until a link fills (its flows are
// fixed there) or a flow reaches its bound (it is fixed at its bound).
void FluidNetwork::solve() {
  gather();
  std::size_t unfixed = moving_.size();
  const std::vector<int>& links = links_;
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
    for (int f : moving_)
      if (!fixed_[static_cast<std::size_t>(f)])
        level = std::min(level, flows_[static_cast<std::size_t>(f)].bound * flows_[static_cast<std::size_t>(f)].penalty);
    for (int l : links)
      if (active_[static_cast<std::size_t>(l)] > 0)
        level = std::min(level, std::max(0.0, room_[static_cast<std::size_t>(l)]) / weight_[static_cast<std::size_t>(l)]);
    // Fix the flows at their bound, then those on every link that is now full.
    const double tolerance = 1e-12 * std::max(1.0, level);
    for (int f : moving_) {
      const auto uf = static_cast<std::size_t>(f);
      if (!fixed_[uf] && flows_[uf].bound * flows_[uf].penalty <= level + tolerance) fix(uf, flows_[uf].bound);
    }
    for (int l : links) {
      const auto ul = static_cast<std::size_t>(l);
      if (active_[ul] == 0 || std::max(0.0, room_[ul]) / weight_[ul] > level + tolerance) continue;
      for (int f : users_[ul]) {
        const auto uf = static_cast<std::size_t>(f);
        if (!fixed_[uf]) fix(uf, std::min(flows_[uf].bound, level / flows_[uf].penalty));
      }
    }
  }
}

void FluidNetwork::release(std::size_t f, double at) {
  moves_[f] = std::max(moves_[f], at) + flows_[f].latency;
  released_.push_back(static_cast<int>(f));
}

// Indexes the flows added since the last run: each link's users, each flow's
// followers, and the flows released at their start.
void FluidNetwork::prepare() {
  const std::size_t n = flows_.size();
  for (auto& u : users_) u.clear();
  links_.clear();
  followers_.assign(n, {});
  waiting_for_.assign(n, 0);
  for (std::size_t f = 0; f < n; ++f) {
    for (const auto& [g, lag] : flows_[f].after) {
      followers_[static_cast<std::size_t>(g)].emplace_back(static_cast<int>(f), lag);
      ++waiting_for_[f];
    }
  }
  rate_.assign(n, 0.0);
  fixed_.assign(n, 1);
  end_.assign(n, kInfinity);
  left_.resize(n);
  moves_.resize(n);
  weight_.assign(capacity_.size(), 0.0);
  active_.assign(capacity_.size(), 0);
  room_.assign(capacity_.size(), 0.0);
  users_.resize(capacity_.size());
  released_.clear();
  moving_.clear();
  for (std::size_t f = 0; f < n; ++f) {
    left_[f] = flows_[f].bytes;
    moves_[f] = flows_[f].start;
    if (waiting_for_[f] == 0) release(f, flows_[f].start);
  }
}

// At `now`: whoever's latency is paid moves; whoever moved all its bytes ends,
// and releases those that wait for it (which may move at once). Returns how many
// ended.
std::size_t FluidNetwork::settle(double now) {
  std::size_t ended = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = 0; k < released_.size();) {
      if (moves_[static_cast<std::size_t>(released_[k])] > now * (1 + 1e-12)) {
        ++k;
        continue;
      }
      moving_.push_back(released_[k]);
      released_[k] = released_.back();
      released_.pop_back();
    }
    for (std::size_t k = 0; k < moving_.size();) {
      const auto f = static_cast<std::size_t>(moving_[k]);
      if (left_[f] > 1e-9 * std::max(1.0, flows_[f].bytes)) {
        ++k;
        continue;
      }
      end_[f] = now;
      ++ended;
      moving_[k] = moving_.back();
      moving_.pop_back();
      for (const auto& [g, lag] : followers_[f]) {
        const auto ug = static_cast<std::size_t>(g);
        moves_[ug] = std::max(moves_[ug], now + lag);
        if (--waiting_for_[ug] == 0) {
          release(ug, moves_[ug]);
          changed = true;
        }
      }
    }
  }
  return ended;
}

// Every input of a run: the links' capacities, then each flow's numbers, its
// routes and the flows it comes after, each list led by its length.
FluidMemo::Key FluidNetwork::memo_key() const {
  FluidMemo::Key key(capacity_);
  key.push_back(static_cast<double>(flows_.size()));
  for (const Flow& f : flows_) {
    key.insert(key.end(), {f.start, f.bytes, f.latency, f.bound, f.penalty, f.factor});
    for (const std::vector<int>* links : {&f.route, &f.back}) {
      key.push_back(static_cast<double>(links->size()));
      key.insert(key.end(), links->begin(), links->end());
    }
    key.push_back(static_cast<double>(f.after.size()));
    for (const auto& [g, lag] : f.after) key.insert(key.end(), {static_cast<double>(g), lag});
  }
  return key;
}

double FluidNetwork::run(const std::atomic<bool>* stop, FluidMemo* memo) {
  if (memo == nullptr) return simulate(stop);
  FluidMemo::Key key = memo_key();
  double last = 0.0;
  if (memo->find(key, end_, last)) {
    clear();
    return last;
  }
  last = simulate(stop);
  memo->insert(std::move(key), end_, last);
  return last;
}

double FluidNetwork::simulate(const std::atomic<bool>* stop) {
  prepare();
  double now = 0.0, last = 0.0;
  for (std::size_t remaining = flows_.size(), events = 0; remaining > 0; ++events) {
    if ((events & 1023) == 0) check_stop(stop);
    const std::size_t ended = settle(now);
    if (ended > 0) last = now;
    remaining -= ended;
    if (remaining == 0) break;
    solve();
    double next = kInfinity;
    for (int f : released_) next = std::min(next, moves_[static_cast<std::size_t>(f)]);
    for (int f : moving_) {
      const auto uf = static_cast<std::size_t>(f);
      if (rate_[uf] > 0) next = std::min(next, now + left_[uf] / (rate_[uf] * flows_[uf].factor));
    }
    if (!(next < kInfinity)) {  // nothing can move: a zero-capacity link
      last = kInfinity;
      break;
    }
    for (int f : moving_) {
      const auto uf = static_cast<std::size_t>(f);
      left_[uf] = std::max(0.0, left_[uf] - rate_[uf] * flows_[uf].factor * (next - now));
    }
    now = next;
  }
  clear();
  return last;
}

}  // namespace avb
