#include "sgd/event_sgd.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace avb {

namespace {
constexpr int kStepOver = -2;   // the driver's events: a peer's step has computed,
constexpr int kProgressed = -3;  // and its progress() is over
}  // namespace

EventSgd::EventSgd(const TrainingOptions& options, EventPeers& peers, const FailureModel& failures, std::uint64_t seed,
                   int n_peers, std::function<double(int)> work)
    : o_(options), peers_(peers), work_(std::move(work)), n_(n_peers) {
  context_.failures = &failures;
  context_.seed = seed;
  context_.step_done = [this](int p) { round_over(p); };
  const auto n = static_cast<std::size_t>(n_peers);
  round_.assign(n, 1);
  since_.assign(n, 0);
  step_.assign(n, 0);
  until_.resize(n);
  for (int p = 0; p < n_peers; ++p) until_[static_cast<std::size_t>(p)] = local_steps_before(o_, seed, p, 1);
}

void EventSgd::begin_trial(const Population& x) { peers_.begin_trial(x, context_); }

EventSgd::Interval EventSgd::run(Population& x, int from, int to, const Hosts& hosts,
                                 const std::function<void(int, int)>& gradient, const std::atomic<bool>* stop) {
  if (!context_.transit) {
    context_.transit.emplace(hosts, n_);
    // The trainer measures with a verdict of three doubles (sgd/trainer.cpp).
    starts_ = broadcast_starts(*context_.transit, n_, 3 * sizeof(double));
  }
  context_.transit->keep_ends_in(peers_.link_ends());
  x_ = &x;
  gradient_ = &gradient;
  to_ = to;
  context_.queue.reset();
  entries_.assign(static_cast<std::size_t>(n_), 0.0);
  for (int p = 0; p < n_; ++p) {
    if (step_[static_cast<std::size_t>(p)] != from) throw Error("EventSgd: peers are not at the interval's first step");
    context_.queue.at(starts_[static_cast<std::size_t>(p)], p, kStepOver, -1);
  }
  for (std::uint64_t events = 0; !context_.queue.empty(); ++events) {
    if ((events & 255) == 0) check_stop(stop);
    const Event e = context_.queue.pop();
    if (e.kind == kProgressed)
      progressed(e.peer);
    else if (e.kind != kStepOver)
      peers_.handle(x, e);
    else if (e.arg < 0)
      next_step(e.peer);  // the interval's start
    else
      step_over(e.peer);
  }
  peers_.leave_settle();
  Interval out;
  out.seconds = barrier_end(entries_, *context_.transit);
  out.effect = peers_.take_effect();
  out.effect.bytes = context_.bytes;
  context_.bytes = 0;
  out.rounds_done = round_[0] - 1;
  return out;
}

// Peer p's next step begins now: its gradient (when it is up in the round its
// steps lead to), then its computation; or, after the interval's last step, the
// settle barrier.
void EventSgd::next_step(int p) {
  const auto i = static_cast<std::size_t>(p);
  if (step_[i] == to_) {
    entries_[i] = context_.queue.now();
    peers_.settle(*x_, p);
    return;
  }
  double seconds = 0.0;
  if (context_.failures->alive(round_[i], p)) {
    (*gradient_)(p, step_[i]);
    seconds = work_ ? work_(p) : 0.0;
  }
  context_.queue.at(context_.queue.now() + seconds, p, kStepOver, step_[i]);
}

void EventSgd::step_over(int p) {
  const auto i = static_cast<std::size_t>(p);
  const double cost = peers_.progress(*x_, p);
  ++step_[i];
  ++since_[i];
  if (cost > 0)
    context_.queue.at(context_.queue.now() + cost, p, kProgressed);
  else
    progressed(p);
}

// After the step's progress(): the peer's round when its local steps are done,
// else its next step.
void EventSgd::progressed(int p) {
  const auto i = static_cast<std::size_t>(p);
  if (since_[i] == until_[i])
    peers_.step(*x_, p, round_[i]);  // round_over when it returns
  else
    next_step(p);
}

void EventSgd::round_over(int p) {
  const auto i = static_cast<std::size_t>(p);
  ++round_[i];
  since_[i] = 0;
  until_[i] = local_steps_before(o_, context_.seed, p, round_[i]);
  next_step(p);
}

}  // namespace avb
