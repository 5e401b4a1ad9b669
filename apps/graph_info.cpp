// graph_info: what spectral theory predicts for gossip on a graph, without running it.
//
//   graph_info --peers 1024 --topology torus [--weights uniform] [--seed 0] [--curve 50]
//
// Prints the graph's degrees, the second-largest |eigenvalue| rho of its mixing
// matrix W, the Laplacian's algebraic connectivity lambda2, and two predictions of
// the rounds synchronous gossip (x <- Wx) needs to reach relative error 1e-3, i.e.
// variance / initial variance below 1e-6:
//   asymptotic:    log(1e-3) / log(rho)                     (the slowest mode alone)
//   full spectrum: first t with sum_k |lambda_k|^(2t) / (N-1) below 1e-6
//                  (the expected ratio for i.i.d. initial values; normal W only)
// --curve R also prints that expected ratio for t = 0..R, one per line.
// --seed is the trial seed that draws random-regular graphs (averaging_bench's
// trial k uses trial_seed(--seed, k); --trial-of S K prints it and exits).
// A plain program (no MPI calls); built with the Open MPI build only.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/app_support.hpp"
#include "core/error.hpp"
#include "run/averaging.hpp"
#include "sim/spectral.hpp"
#include "sim/topology.hpp"

namespace {

// --trial-of SEED K: the seed averaging_bench's trial K runs with.
void print_trial_seed(const std::vector<std::string>& trial_of) {
  const auto s = avb::app::parse_seed("--trial-of", trial_of[0]);
  const auto k = avb::app::parse_integer("--trial-of", trial_of[1], 0, 1 << 30);
  std::printf("%llu\n", static_cast<unsigned long long>(avb::trial_seed(s, static_cast<int>(k))));
}

// The smallest and largest in-degree of round 1.
std::pair<std::size_t, std::size_t> degree_range(const avb::Topology& g) {
  std::size_t dmin = SIZE_MAX, dmax = 0;
  for (int i = 0; i < g.peers(); ++i) {
    const std::size_t d = g.in_neighbours(1, i).size();
    dmin = std::min(dmin, d);
    dmax = std::max(dmax, d);
  }
  return {dmin, dmax};
}

// The first t whose expected variance ratio is below 1e-6 (-1 if none up to the
// search's limit): a doubling search for the horizon, then the curve up to it.
int spectrum_rounds(const avb::Topology& g, avb::Weights w) {
  int horizon = 16;
  std::vector<double> ratio;
  while (true) {
    ratio = avb::predicted_variance_ratio(g, w, horizon);
    if (ratio.back() < 1e-6 || horizon > (1 << 22)) break;
    horizon *= 2;
  }
  for (int t = 0; t < static_cast<int>(ratio.size()); ++t)
    if (ratio[t] < 1e-6) return t;
  return -1;
}

// The predictions for a static graph.
void print_spectrum(const avb::Topology& g, avb::Weights w, int rounds) {
  const auto [dmin, dmax] = degree_range(g);
  const double rho = avb::second_largest_modulus(avb::mixing_matrix(g, w, 1));
  const double lambda2 = avb::laplacian_lambda2(g);
  std::printf("peers %d topology %s weights %s directed %d in-degree %zu..%zu\n", g.peers(),
              avb::to_string(g.spec()).c_str(), std::string(avb::to_string(w)).c_str(), g.directed() ? 1 : 0, dmin,
              dmax);
  std::printf("rho %.12g\nlambda2 %.12g\n", rho, lambda2);
  std::printf("asymptotic_rounds_to_1e-3 %.6g\n", rho > 0 ? std::log(1e-3) / std::log(rho) : 0.0);
  std::printf("spectrum_rounds_to_1e-3 %d\n", spectrum_rounds(g, w));
  if (rounds > 0) {
    const auto c = avb::predicted_variance_ratio(g, w, rounds);
    for (int t = 0; t <= rounds; ++t) std::printf("curve %d %.17g\n", t, c[t]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Spectral predictions for gossip on an avbench topology", "graph_info"};
  std::string peers = "1024", topology = "ring", weights = "uniform", seed = "0", curve = "0";
  std::vector<std::string> trial_of;
  app.add_option("--peers", peers, "number of peers N")->capture_default_str();
  app.add_option("--topology", topology, "as averaging_bench --topology")->capture_default_str();
  app.add_option("--weights", weights, "uniform or metropolis")->capture_default_str();
  app.add_option("--seed", seed, "trial seed (random-regular graphs)")->capture_default_str();
  app.add_option("--curve", curve, "also print the expected variance ratio for t = 0..R")->capture_default_str();
  app.add_option("--trial-of", trial_of, "SEED K: print the seed of averaging_bench's trial K and exit")
      ->expected(2);
  try {
    app.parse(argc, argv);
    if (!trial_of.empty()) {
      print_trial_seed(trial_of);
      return 0;
    }
    const int n = static_cast<int>(avb::app::parse_integer("--peers", peers, 1, 1 << 14));
    const int rounds = static_cast<int>(avb::app::parse_integer("--curve", curve, 0, 1 << 24));
    const avb::Topology g(avb::parse_topology(topology), n, avb::app::parse_seed("--seed", seed));
    const avb::Weights w = avb::parse_weights(weights);
    if (g.time_varying()) {
      // One round's W says nothing about the product over a period: one-peer-exp
      // is exact after log2 N rounds when N is a power of two, base:K after its
      // schedule for any N; the epidemic graph is drawn afresh (docs/protocols.md).
      const char* exact = g.spec().kind == avb::TopologyKind::base           ? "for any N"
                          : g.spec().kind == avb::TopologyKind::one_peer_exp ? "when N is a power of two"
                                                                             : nullptr;
      if (exact != nullptr)
        std::printf("peers %d topology %s time-varying: exact average after %d rounds %s\n", n,
                    avb::to_string(g.spec()).c_str(), g.period(), exact);
      else
        std::printf("peers %d topology %s time-varying: drawn afresh each round, never exact (docs/protocols.md)\n",
                    n, avb::to_string(g.spec()).c_str());
      return 0;
    }
    print_spectrum(g, w, rounds);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_info: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
