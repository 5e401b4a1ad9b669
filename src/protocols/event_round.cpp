#include "protocols/event_round.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "protocols/link_loads.hpp"

namespace avb {

std::vector<double> broadcast_starts(const Transit& transit, int n, double bytes) {
  // r receives at received[r] from r - lowbit(r), then sends to r + m for every m
  // below lowbit(r), largest first, each send over when it has arrived.
  std::vector<double> received(static_cast<std::size_t>(n), 0.0), leaves(received.size(), 0.0);
  for (int r = 0; r < n; ++r) {
    int mask = 1;
    while (mask < n && !(r & mask)) mask <<= 1;
    double now = received[static_cast<std::size_t>(r)];
    for (mask >>= 1; mask > 0; mask >>= 1) {
      if (r + mask >= n) continue;
      now += transit.alone(r, r + mask, bytes);
      received[static_cast<std::size_t>(r + mask)] = now;
    }
    leaves[static_cast<std::size_t>(r)] = now;
  }
  const double last = *std::max_element(leaves.begin(), leaves.end());
  for (double& t : leaves) t -= last;
  return leaves;
}

double barrier_end(std::span<const double> entries, const Transit& transit) {
  const int n = static_cast<int>(entries.size());
  if (const std::optional<double> token = transit.empty_seconds(); token && *token >= 0) {
    // Every token takes the same time, so each peer's clock after a step is the
    // latest of its window's plus the token (rounding is monotone), the windows
    // cover everyone after the last step, and each delivery is no later: the
    // step-by-step value, in O(N) rather than O(N log N).
    double end = entries.empty() ? 0.0 : *std::max_element(entries.begin(), entries.end());
    for (int step = 1; step < n; step *= 2) end += *token;
    return std::max(end, 0.0);
  }
  return barrier_end_by_steps(entries, transit);
}

double barrier_end_by_steps(std::span<const double> entries, const Transit& transit) {
  const int n = static_cast<int>(entries.size());
  std::vector<double> at(entries.begin(), entries.end()), next(at.size()), sent(at.size(), 0.0);
  for (int step = 1; step < n; step *= 2) {
    for (int r = 0; r < n; ++r) {
      const int from = (r - step + n) % n;
      const auto ur = static_cast<std::size_t>(r), uf = static_cast<std::size_t>(from);
      const double arrives = std::max(at[uf], at[ur]) + transit.alone(from, r, 0.0);
      next[ur] = std::max(at[ur], arrives);
      sent[uf] = std::max(sent[uf], arrives);  // the sender's token is delivered
    }
    at.swap(next);
  }
  double end = 0.0;
  for (std::size_t r = 0; r < at.size(); ++r) end = std::max({end, at[r], sent[r]});
  return end;
}

// Churn: the runner loaded each joiner's values from its donor before the round;
// as sim/churn.hpp's load_joiners, each donor sends its vector to its joiners at
// once, each transfer moving once both have begun the round, and both go on when
// it has arrived (their work follows).
void EventRound::load_joiners(const Population& x, const PopulationRound& round) {
  const std::vector<int> donors = round.failures.donors(round.t);
  const double bytes = sizeof(double) * static_cast<double>(x.model_dim);
  std::vector<std::pair<int, double>> arrivals;
  for (std::size_t p = 0; p < donors.size(); ++p) {
    const int d = donors[p];
    if (d < 0) continue;
    peers_->on_join(x, static_cast<int>(p));
    const double from = std::max(starts_[p], starts_[static_cast<std::size_t>(d)]);
    arrivals.emplace_back(d, from + context_.transit->start(d, static_cast<int>(p), bytes));
    begins_[p] = arrivals.back().second;
  }
  for (std::size_t p = 0; p < donors.size(); ++p)
    if (donors[p] >= 0) context_.transit->end(donors[p], static_cast<int>(p));
  for (const auto& [d, at] : arrivals) begins_[static_cast<std::size_t>(d)] = std::max(begins_[static_cast<std::size_t>(d)], at);
}

void EventRound::begin_trial(const Population& x, std::uint64_t seed) {
  context_.seed = seed;
  context_.step_done = [this](int p) {
    entries_[static_cast<std::size_t>(p)] = context_.queue.now();
    peers_->settle(*x_, p);
  };
  peers_->begin_trial(x, context_);
}

RoundEffect EventRound::step(Population& x, const PopulationRound& round) {
  if (round.links == nullptr) throw Error("an asynchronous protocol's sequential form needs the round's platform");
  x_ = &x;
  if (!context_.transit) {
    context_.transit.emplace(round.links->hosts(), x.n);
    // The runners measure with a verdict of two doubles (run/averaging.cpp).
    starts_ = broadcast_starts(*context_.transit, x.n, 2 * sizeof(double));
  }
  context_.transit->keep_ends_in(peers_->link_ends());
  context_.failures = &round.failures;
  context_.queue.reset();
  entries_.assign(static_cast<std::size_t>(x.n), 0.0);
  begins_.assign(starts_.begin(), starts_.end());
  load_joiners(x, round);
  // The peers' starts go in first: at equal times they come before any event
  // the peers schedule (they were due first), and among themselves by rank.
  for (int p = 0; p < x.n; ++p) {
    const bool up = round.alive[static_cast<std::size_t>(p)] != 0;
    context_.queue.at(begins_[static_cast<std::size_t>(p)] + (up ? round.links->ready(p) : 0.0), p, kStart);
  }
  for (std::uint64_t events = 0; !context_.queue.empty(); ++events) {
    if ((events & 255) == 0) check_stop(round.stop);
    const Event e = context_.queue.pop();
    if (e.kind == kStart)
      peers_->step(x, e.peer, round.t);
    else
      peers_->handle(x, e);
  }
  peers_->leave_settle();
  round.links->ends_by(barrier_end(entries_, *context_.transit));
  RoundEffect effect = peers_->take_effect();
  effect.bytes = context_.bytes;
  context_.bytes = 0;
  return effect;
}

}  // namespace avb
