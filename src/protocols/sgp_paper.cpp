// Protocol "sgp-paper": the Moshpit authors' simulated "SGP" (docs/protocols.md).
#include "protocols/gossip.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "protocols/graph_exchange.hpp"
#include "protocols/sequential.hpp"
#include "protocols/time_model.hpp"

namespace avb {
namespace {

// The Moshpit authors' simulated "SGP": in round t (k = (t-1) mod ceil(log2 N)),
// each alive peer replaces its value by the plain mean of itself and its alive
// exponential neighbours i + 2^k and i - 2^k. Rows are normalised, columns are not:
// the mean drifts, and there are no push-sum weights to correct it.
class SgpPaperProtocol final : public Protocol {
 public:
  explicit SgpPaperProtocol(int n) : n_(n) {}

  void step(std::span<double> x, Round& round) override {
    const int me = round.world.rank(), t = round.t;
    if (n_ < 2 || !round.failures.alive(t, me)) return;
    neighbours_ = sgp_paper_neighbours(n_, t, me);
    alive_.clear();
    for (int j : neighbours_) {
      if (round.failures.alive(t, j)) alive_.push_back(j);
      else round.counters.waited_on_failure = 1;  // noticed after the timeout
    }
    // The relation is symmetric: whoever i pulls from also pulls from i.
    const auto& in = exchange_.run(round.world, std::span<const double>(x.data(), x.size()), alive_, alive_);
    sum_in_peer_order(me, x, alive_, in, sum_);
    const double count = static_cast<double>(alive_.size() + 1);
    for (std::size_t c = 0; c < x.size(); ++c) x[c] = sum_[c] / count;
  }

 private:
  int n_;
  NeighbourExchange<double> exchange_;
  std::vector<int> neighbours_, alive_;
  std::vector<double> sum_;
};

// The sequential form: each alive peer's plain mean over itself and its alive
// neighbours, on the old values, summed in peer order.
class SgpPaperPopulation final : public SequentialProtocol {
 public:
  RoundEffect step(Population& x, const PopulationRound& round) override {
    const int n = x.n;
    const auto d = static_cast<std::size_t>(x.dim);
    old_ = x.values;
    sum_.resize(d);
    RoundEffect effect;
    std::size_t busiest = 0;
    int period = 0;
    while ((1 << period) < n) ++period;
    for (int i = 0; i < n; ++i) {
      if (n < 2 || !round.alive[static_cast<std::size_t>(i)]) continue;
      // sgp_paper_neighbours(n, t, i), without its allocation: i +- 2^k, distinct.
      members_.assign(1, i);
      const int step = 1 << ((round.t - 1) % period);
      for (int j : {(i + step) % n, ((i - step) % n + n) % n})
        if (j != i && round.alive[static_cast<std::size_t>(j)] &&
            std::find(members_.begin(), members_.end(), j) == members_.end())
          members_.push_back(j);
      std::sort(members_.begin(), members_.end());
      std::fill(sum_.begin(), sum_.end(), 0.0);
      for (int j : members_)
        for (std::size_t c = 0; c < d; ++c) sum_[c] += old_[static_cast<std::size_t>(j) * d + c];
      for (std::size_t c = 0; c < d; ++c) x.peer(i)[c] = sum_[c] / static_cast<double>(members_.size());
      effect.bytes += 8 * d * (members_.size() - 1);
      busiest = std::max(busiest, members_.size() - 1);
    }
    effect.pattern = {1, 8.0 * static_cast<double>(d), 8.0 * static_cast<double>(d * busiest)};
    return effect;
  }

 private:
  std::vector<double> old_, sum_;
  std::vector<int> members_;
};

}  // namespace

std::vector<int> sgp_paper_neighbours(int n, int t, int i) {
  std::vector<int> out;
  if (n < 2) return out;
  int period = 0;
  while ((1 << period) < n) ++period;
  const int step = 1 << ((t - 1) % period);
  for (int j : {(i + step) % n, ((i - step) % n + n) % n})
    if (j != i && std::find(out.begin(), out.end(), j) == out.end()) out.push_back(j);
  std::sort(out.begin(), out.end());
  return out;
}

std::unique_ptr<SequentialProtocol> make_sequential_sgp_paper(const ProtocolOptions& /*options*/, int /*n_peers*/) {
  return std::make_unique<SgpPaperPopulation>();
}

std::unique_ptr<Protocol> make_sgp_paper(const ProtocolOptions&, Comm& world) {
  return std::make_unique<SgpPaperProtocol>(world.size());
}

}  // namespace avb
