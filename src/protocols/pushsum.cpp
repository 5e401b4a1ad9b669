// Protocol "pushsum": push-sum (SGP) along a --topology (docs/protocols.md).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "protocols/graph_exchange.hpp"
#include "protocols/population.hpp"
#include "protocols/time_model.hpp"
#include "protocols/resources.hpp"

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


// The sequential form. What the caller did to z since the last round (SGD steps,
// a churn join) joins the numerator, on alive and down peers alike.
class PushSumPopulation final : public SequentialProtocol {
 public:
  PushSumPopulation(const ProtocolOptions& o, int n) : topology_(*o.topology, n) {}

  void begin_trial(const Population& z, std::uint64_t /*seed*/) override {
    const auto d = static_cast<std::size_t>(z.dim);
    mass_.assign(static_cast<std::size_t>(z.n) * (d + 1), 0.0);
    for (int i = 0; i < z.n; ++i) {
      std::copy(z.peer(i).begin(), z.peer(i).end(), row(mass_, i, d).begin());
      row(mass_, i, d)[d] = 1.0;
    }
    last_ = z.values;
  }

  RoundEffect step(Population& z, const PopulationRound& round) override {
    const Topology& g = topology_.get(round.seed, round.stop);
    const int t = round.t, n = z.n;
    const auto d = static_cast<std::size_t>(z.dim);
    for (std::size_t k = 0; k < z.values.size(); ++k) mass_[k / d * (d + 1) + k % d] += z.values[k] - last_[k];
    sent_ = mass_;  // each alive peer's mass times its share
    RoundEffect effect;
    const double message = 8.0 * static_cast<double>(z.model_dim + 1);
    for (int i = 0; i < n; ++i) {
      round.poll(i);
      if (!round.alive[static_cast<std::size_t>(i)]) continue;
      int outs = 0;
      for (int j : g.out_neighbours(t, i))
        if (round.alive[static_cast<std::size_t>(j)]) {
          ++outs;
          round.send(i, j, message);
        }
      const double share = 1.0 / static_cast<double>(outs + 1);
      for (double& v : row(sent_, i, d)) v *= share;
      effect.bytes += 8 * (z.model_dim + 1) * static_cast<std::uint64_t>(outs);
    }
    for (int i = 0; i < n; ++i) {
      round.poll(i);
      if (!round.alive[static_cast<std::size_t>(i)]) continue;
      from_.assign(1, i);
      for (int j : g.in_neighbours(t, i)) {
        if (round.alive[static_cast<std::size_t>(j)]) from_.push_back(j);
        else if (j != i) round.wait(i);  // a silent source is noticed after the timeout
      }
      std::sort(from_.begin(), from_.end());
      const std::span<double> sum = row(mass_, i, d);
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int j : from_)
        for (std::size_t c = 0; c <= d; ++c) sum[c] += row(sent_, j, d)[c];
    }
    // Every peer, alive or down, shows x / w and remembers it.
    for (int i = 0; i < n; ++i)
      for (std::size_t c = 0; c < d; ++c) z.peer(i)[c] = row(mass_, i, d)[c] / row(mass_, i, d)[d];
    last_ = z.values;
    return effect;
  }

 private:
  static std::span<double> row(std::vector<double>& m, int i, std::size_t d) {
    return {m.data() + static_cast<std::size_t>(i) * (d + 1), d + 1};
  }
  TrialTopology topology_;
  std::vector<double> mass_, sent_, last_;  // mass: (x, w) per peer
  std::vector<int> from_;
};

}  // namespace

// (x, w) along every out-edge; the sequential form keeps x, w and the shares in flight.
ProtocolResources resources_pushsum(const ProtocolOptions& o, const ResourceQuery& q) {
  ProtocolResources r = graph_resources(o, q, 8.0 * (static_cast<double>(q.model_dim) + 1));
  r.population_vectors = 3;
  r.population_bytes = 64;
  return r;
}

extern constinit const ProtocolForms kPushsumForms = forms_of<PushSumProtocol, PushSumPopulation>(resources_pushsum);

}  // namespace avb
