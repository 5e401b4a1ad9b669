// Protocol "sgp-paper": the Moshpit authors' simulated "SGP" (docs/protocols.md).
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "protocols/gossip.hpp"
#include "protocols/graph_exchange.hpp"
#include "protocols/population.hpp"
#include "protocols/time_model.hpp"
#include "protocols/resources.hpp"

namespace avb {
namespace {

struct Edge {
  int row, col;
};

// Where the identity's diagonal one of row i lands when the matrix is rolled by k
// (0 < k < n) in flattened order, as numpy's roll without an axis does: k places
// further along its row while that fits, else into the next row, and the last
// row's one wraps around to row 0.
Edge rolled_one(int n, int k, int i) {
  const int row = i + k < n ? i : (i + 1 < n ? i + 1 : 0);
  return {row, (i + k) % n};
}

// The two shifts of round t's graph: 2^h and 2^(h+1), h = t mod H.
std::pair<int, int> shifts(int n, int t) {
  const int h = t % sgp_paper_period(n);
  return {1 << h, 2 << h};
}

// Drops the peers that are down; true if one of them was a peer other than `me`.
template <class Alive>
bool keep_alive(std::vector<int>& peers, int me, Alive alive) {
  bool dropped_other = false;
  std::erase_if(peers, [&](int j) {
    const bool down = !alive(j);
    dropped_other |= down && j != me;
    return down;
  });
  return dropped_other;
}

// The distinct peers of an ascending list, without `me`: whom messages go to or
// come from.
void distinct_others(const std::vector<int>& peers, int me, std::vector<int>& out) {
  out.clear();
  for (int j : peers)
    if (j != me && (out.empty() || out.back() != j)) out.push_back(j);
}

// out = the plain mean over the (alive) sources, each occurrence counted and the
// values added in ascending peer order, so that every engine adds
// the same terms in the same order. value(j) points at peer j's d values.
template <class Value>
void pull_mean(const std::vector<int>& sources, Value value, std::span<double> out, std::vector<double>& sum) {
  sum.assign(out.size(), 0.0);
  for (int j : sources) {
    const double* v = value(j);
    for (std::size_t c = 0; c < out.size(); ++c) sum[c] += v[c];
  }
  const double count = static_cast<double>(sources.size());
  for (std::size_t c = 0; c < out.size(); ++c) out[c] = sum[c] / count;
}

// Each alive peer replaces its value by the plain mean of its alive sources' values.
// Rows are normalised, columns are not: the mean drifts, and there are no push-sum
// weights to correct it. The relation is not symmetric: a peer sends to its sinks
// and receives from its sources.
class SgpPaperProtocol final : public Protocol {
 public:
  explicit SgpPaperProtocol(int n) : n_(n) {}

  void step(std::span<double> x, Round& round) override {
    const int me = round.world.rank(), t = round.t;
    if (!round.failures.alive(t, me)) return;
    auto alive = [&](int j) { return round.failures.alive(t, j); };
    sgp_paper_sources(n_, t, me, sources_);
    if (keep_alive(sources_, me, alive)) round.counters.waited_on_failure = 1;  // noticed after the timeout
    sgp_paper_sinks(n_, t, me, sinks_);
    keep_alive(sinks_, me, alive);
    distinct_others(sources_, me, from_);
    distinct_others(sinks_, me, to_);
    const auto& in = exchange_.run(round.world, std::span<const double>(x.data(), x.size()), to_, from_);
    pull_mean(
        sources_,
        [&](int j) {
          if (j == me) return static_cast<const double*>(x.data());
          const auto slot = std::lower_bound(from_.begin(), from_.end(), j) - from_.begin();
          return in.data() + static_cast<std::size_t>(slot) * x.size();
        },
        x, sum_);
  }

 private:
  int n_;
  NeighbourExchange<double> exchange_;
  std::vector<int> sources_, sinks_, from_, to_;
  std::vector<double> sum_;
};

// The sequential form: each alive peer's pull mean on the old values.
class SgpPaperPopulation final : public SequentialProtocol {
 public:
  RoundEffect step(Population& x, const PopulationRound& round) override {
    const auto d = static_cast<std::size_t>(x.dim);
    old_ = x.values;
    auto alive = [&](int j) { return round.alive[static_cast<std::size_t>(j)] != 0; };
    RoundEffect effect;
    for (int i = 0; i < x.n; ++i) {
      round.poll(i);
      if (!alive(i)) continue;
      sgp_paper_sources(x.n, round.t, i, sources_);
      if (keep_alive(sources_, i, alive)) round.wait(i);
      distinct_others(sources_, i, others_);
      const std::size_t received = others_.size();
      pull_mean(sources_, [&](int j) { return old_.data() + static_cast<std::size_t>(j) * d; }, x.peer(i), sum_);
      effect.bytes += 8 * d * received;
      for (int j : others_) round.send(j, i, 8.0 * static_cast<double>(d));
    }
    return effect;
  }

 private:
  std::vector<double> old_, sum_;
  std::vector<int> sources_, others_;
};

}  // namespace

int sgp_paper_period(int n) {
  if (n < 3)
    throw ConfigError("--protocol sgp-paper: " + std::to_string(n) +
                      " peers, but the authors' graphs number floor(log2(N - 1)), none below 3; accepted: "
                      "--peers (or MPI ranks) >= 3");
  int h = 0;
  while ((2 << h) <= n - 1) ++h;  // the largest h with 2^h <= n - 1
  return h;
}

void sgp_paper_sources(int n, int t, int i, std::vector<int>& out) {
  out.assign(1, i);
  const auto [k1, k2] = shifts(n, t);
  // Only the diagonal ones of rows i and i - 1 (row n - 1 for i = 0) can land in row i.
  for (int k : {k1, k2})
    for (int diagonal : {i, (i + n - 1) % n})
      if (const Edge e = rolled_one(n, k, diagonal); e.row == i) out.push_back(e.col);
  std::sort(out.begin(), out.end());
}

void sgp_paper_sinks(int n, int t, int j, std::vector<int>& out) {
  out.assign(1, j);
  const auto [k1, k2] = shifts(n, t);
  // Column j holds exactly one one per shift: the diagonal one of row j - k (mod n).
  for (int k : {k1, k2}) out.push_back(rolled_one(n, k, (j - k % n + n) % n).row);
  std::sort(out.begin(), out.end());
}

std::unique_ptr<SequentialProtocol> make_sequential_sgp_paper(const ProtocolOptions& /*options*/, int /*n_peers*/) {
  return std::make_unique<SgpPaperPopulation>();
}

std::unique_ptr<Protocol> make_sgp_paper(const ProtocolOptions&, Comm& world) {
  return std::make_unique<SgpPaperProtocol>(world.size());
}

// At most four others pulled from and three pushed to per round (two rolled shifts).
ProtocolResources resources_sgp_paper(const ProtocolOptions& /*o*/, const ResourceQuery& q) {
  ProtocolResources r;
  const double vector = 8.0 * static_cast<double>(q.model_dim);
  r.round_bytes = 4.0 * q.peers * vector;
  r.pattern = {1, vector, 4 * vector};
  r.messages_in_flight = 8;
  r.population_vectors = 1;
  r.population_bytes = 32;
  r.work_per_peer = 5.0 * (static_cast<double>(q.dim) + 4) + 16;
  return r;
}

extern constinit const ProtocolForms kSgpPaperForms{make_sgp_paper, make_sequential_sgp_paper, resources_sgp_paper};

}  // namespace avb
