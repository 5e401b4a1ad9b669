// Protocol "pushsum": push-sum (SGP) along a --topology (docs/protocols.md).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "protocols/graph_exchange.hpp"

namespace avb {
namespace {

// Push-sum: the peer's mass (x, w) is split evenly between itself and its alive
// out-neighbours and sent as one message of d + 1 values; the estimate is z = x / w.
// A share meant for a failed peer stays with its sender, so sum(x) and sum(w) are
// conserved exactly (up to rounding) whatever fails.
class PushSumProtocol final : public Protocol {
 public:
  PushSumProtocol(const ProtocolOptions& o, int n) : topology_(*o.topology, n) {}

  void step(std::span<double> z, Round& round) override {
    const Topology& g = topology_.get(round.seed);
    const int me = round.world.rank(), t = round.t;
    const std::size_t d = z.size();
    if (mass_.empty() || seed_ != round.seed) {  // a new trial: x = z, w = 1
      seed_ = round.seed;
      mass_.assign(z.begin(), z.end());
      mass_.push_back(1.0);
    } else {
      // What the caller did to z since the last round (SGD steps) goes into the
      // numerator as is: the sum of numerators then moves by the sum of the
      // steps, unweighted, as in SGP. Pure averaging leaves z alone: adding 0.
      for (std::size_t c = 0; c < d; ++c) mass_[c] += z[c] - last_[c];
    }
    if (!round.failures.alive(t, me)) {
      publish(z);
      return;
    }
    to_.clear();
    for (int j : g.out_neighbours(t, me))
      if (round.failures.alive(t, j)) to_.push_back(j);
    from_.clear();
    for (int j : g.in_neighbours(t, me)) {
      if (round.failures.alive(t, j)) from_.push_back(j);
      else if (j != me) round.counters.waited_on_failure = 1;  // noticed after the timeout
    }
    const double share = 1.0 / static_cast<double>(to_.size() + 1);
    for (double& v : mass_) v *= share;
    const auto& in = exchange_.run(round.world, std::span<const double>(mass_), to_, from_);
    sum_in_peer_order(me, mass_, from_, in, sum_);
    mass_ = sum_;
    publish(z);
  }

 private:
  // z = x / w, remembered to see the caller's changes at the next round.
  void publish(std::span<double> z) {
    const std::size_t d = z.size();
    for (std::size_t c = 0; c < d; ++c) z[c] = mass_[c] / mass_[d];
    last_.assign(z.begin(), z.end());
  }

  TrialTopology topology_;
  NeighbourExchange<double> exchange_;
  std::vector<double> mass_, sum_;  // x then w
  std::vector<double> last_;        // z as the last round left it
  std::uint64_t seed_ = 0;
  std::vector<int> from_, to_;
};

}  // namespace

std::unique_ptr<Protocol> make_pushsum(const ProtocolOptions& o, Comm& world) {
  return std::make_unique<PushSumProtocol>(o, world.size());
}

}  // namespace avb
