#include "common/combinations.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "common/app_support.hpp"
#include "core/format.hpp"
#include "sim/spectral.hpp"
#include "sim/topology.hpp"

namespace avb::app {

namespace {

// What the simulated-time flags amount to on this engine, and a straggler
// fraction that has nothing to slow down.
// can_fail: a peer may wait out a failed partner in this run.
void simulated_only(std::vector<std::string>& out, bool simulated, const char* flops_flag, double flops,
                    const StragglerSpec& stragglers, double detection_timeout, bool can_fail) {
  if (!simulated) {
    std::string flags;
    if (flops > 0) flags += std::string(flops_flag);
    if (stragglers.fraction > 0) flags += (flags.empty() ? "" : ", ") + std::string("--stragglers");
    const bool one = flags.find(',') == std::string::npos;
    if (!flags.empty())
      out.push_back(flags + (one ? ": acts only under SMPI (it charges" : ": act only under SMPI (they charge") +
                    " simulated computation time); on this engine " + (one ? "it changes" : "they change") +
                    " nothing but the recorded /config");
    if (detection_timeout > 0 && can_fail)
      out.push_back("--detection-timeout: on this engine no peer waits; the timeout is only added to the trace's "
                    "detection_time column (it takes simulated time under SMPI)");
    return;
  }
  if (stragglers.fraction > 0 && flops == 0)
    out.push_back("--stragglers: has no effect without " + std::string(flops_flag) +
                  " (a straggler's simulated computation is slowed down, and there is none)");
  // The default (0) lets a peer learn of a failure at once, which no real
  // network does: the time column would then show failures as free.
  if (detection_timeout == 0 && can_fail)
    out.push_back("--detection-timeout: 0 s, so a failed peer costs no time (the time column counts no wait "
                  "for a silent peer); give the seconds a peer waits before it gives up on one, e.g. "
                  "--detection-timeout 0.1");
}

// Moshpit on a grid with many more cells than peers: most lines hold fewer than
// two peers, and a peer alone on its line does not average that round.
void sparse_grid(std::vector<std::string>& out, const ProtocolOptions& p, const ProtocolFlags& flags, int n) {
  if (!takes(p.name, "--grid") || !flags.changed.count("--grid")) return;  // the default grid suits N
  double cells = 1;
  for (int side : p.moshpit.grid) cells *= side;
  const double shortest = *std::min_element(p.moshpit.grid.begin(), p.moshpit.grid.end());
  const double per_line = n * shortest / cells;  // peers in random distinct cells
  if (per_line < 2)
    out.push_back("--grid: " + grid_to_string(p.moshpit.grid) + " has " + format_number(cells) + " cells for " +
                  std::to_string(n) + " peers, about " + format_number(std::round(per_line * 100) / 100) +
                  " peers per line along its shortest side: most peers find no partner in most rounds (the "
                  "default grid, sides ceil(sqrt(N)), holds about sqrt(N) per line)");
}

std::string three_digits(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

// A step above 2 (1 + momentum) / L grows the error at every local step
// (sgd/options.hpp, stable_lr_bound); a warning before the run names the bound and
// a stable value, so that the user need not wait for the diverged trials. Under
// allreduce with --local-steps 1 the bound is the pooled problem's and the run
// diverges; elsewhere it is the stiffest peer's, whose growth averaging may still
// undo (gossip at a few peers does), so the warning says "unless". Decaying
// schedules start at --lr, so their first steps are the ones at risk.
void unstable_lr(std::vector<std::string>& out, const TrainingOptions& o, int n) {
  const std::optional<double> bound = stable_lr_bound(o, n);
  if (!bound || o.lr.lr <= *bound) return;
  const bool pooled = o.protocol.name == "allreduce" && o.local_steps == 1;
  const bool epfl = o.objective.preset == QuadraticPreset::epfl;
  const std::string curvature = three_digits(2.0 * (1.0 + o.momentum) / *bound);
  out.push_back("--lr: " + format_number(o.lr.lr) + " is above 2(1 + momentum)/L = " + three_digits(*bound) + ", " +
                (pooled ? "where L = " + curvature +
                              " is the pooled quadratic's curvature (allreduce every step): expect the run to diverge"
                        : "where L = " + curvature + " is the stiffest peer's curvature" + (epfl ? " (N)" : "") +
                              ": its local steps grow its error, and the run diverges unless the averaging pulls "
                              "it back faster") +
                "; --lr " + three_digits(*bound / 2.0) + " is stable (docs/sgd.md)");
}

std::string two_digits(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", v);
  return text;
}

// All-reduce under --on-failure abort: a round averages only when none of the N
// peers fails, with probability (1 - p)^N under transient failures. When the run
// is unlikely to have a single such round, the variance stays where it started.
void hopeless_abort(std::vector<std::string>& out, const AveragingOptions& o, int n) {
  if (o.protocol.name != "allreduce" || o.protocol.on_failure != FailureSemantics::abort ||
      o.failure != FailureKind::transient || o.fail_rate <= 0)
    return;
  const double complete = std::pow(1.0 - o.fail_rate, n);
  const double any = -std::expm1(o.rounds * std::log1p(-complete));  // 1 - (1 - complete)^rounds
  if (any >= 0.1) return;
  out.push_back("--on-failure abort (allreduce's default): a round averages only when none of the " +
                std::to_string(n) + " peers fails, with probability (1 - " + format_number(o.fail_rate) + ")^" +
                std::to_string(n) + " = " + two_digits(complete) + ", so any of the " + std::to_string(o.rounds) +
                " rounds does with probability " + two_digits(any) +
                ": expect the variance to stay put and no target reached; --on-failure survivors averages the "
                "peers alive (docs/failures.md)");
}

// Gossip on a graph whose spectral gap cannot bring the variance to the last
// target within --rounds even without failures: theory's E[var_R] / var_0 for the
// data's N(0, 1) start. The ring's (the default graph's) spectrum has a closed
// form at any N: W's eigenvalues (1 + 2 cos(2 pi k / N)) / 3; other circulant
// graphs go through sim/spectral.hpp, whose N x N matrix limits them to small N.
// Failures only slow it further.
double predicted_ratio(const AveragingOptions& o, int n) {
  const TopologySpec& spec = *o.protocol.topology;
  if (spec.kind == TopologyKind::ring && n >= 3) {
    // Modes k and n - k are equal: half the sum, doubled (the middle mode of an even n once).
    auto mode = [&](int k) { return std::pow((1 + 2 * std::cos(2 * std::numbers::pi * k / n)) / 3, 2.0 * o.rounds); };
    double sum = n % 2 == 0 ? mode(n / 2) : 0.0;
    for (int k = 1; 2 * k < n; ++k) sum += 2 * mode(k);
    return sum / (n - 1);
  }
  if ((spec.kind == TopologyKind::exp || spec.kind == TopologyKind::complete) && n <= 2048)
    return predicted_variance_ratio(Topology(spec, n, o.seed), o.protocol.weights, o.rounds).back();
  return 0.0;  // no prediction: no warning
}

void unreachable_target(std::vector<std::string>& out, const AveragingOptions& o, int n) {
  if (o.protocol.name != "gossip" || !o.protocol.topology || o.targets.empty() || n < 2) return;
  const double target = *std::min_element(o.targets.begin(), o.targets.end());
  double ratio = 0.0;
  try {
    ratio = predicted_ratio(o, n);
  } catch (const ConfigError&) {
    return;  // a graph the spectrum does not cover
  }
  if (ratio <= target) return;
  out.push_back("--topology " + to_string(*o.protocol.topology) + ": gossip on it brings the variance of N(0, 1) "
                "data to about " + two_digits(ratio) + " in " + std::to_string(o.rounds) +
                " rounds even without failures (its spectral gap; docs/protocols.md), above the target " +
                format_number(target) + ": expect it unreached; --topology exp mixes in about log2(N) rounds");
}

}  // namespace

double lattice_decodable_share(double q, double eps, int dim) {
  const double coordinate = std::erf(q * eps / 2 / 2);  // P(|D| <= a) = erf(a / 2) for D ~ N(0, 2)
  return std::pow(coordinate, dim);
}

bool lattice_failures_expected(const AveragingOptions& o) {
  // The initial values are N(0, 1) (run/averaging.hpp).
  const QuantizerSpec& q = o.protocol.quantizer;
  return q.kind == QuantizerKind::lattice && lattice_decodable_share(q.lattice_q, q.lattice_eps, o.dim) < 0.5;
}

std::vector<std::string> averaging_warnings(const AveragingOptions& o, const ProtocolFlags& flags, int n_peers,
                                            bool simulated) {
  std::vector<std::string> out;
  // Under a waiting policy the work decides who is late, on every engine.
  const bool waits = o.protocol.wait.policy != WaitPolicy::all;
  simulated_only(out, simulated, "--compute-flops", waits ? 0.0 : o.compute_flops, o.stragglers, o.detection_timeout,
                 failures_possible(o) && may_wait_on_failure(o.protocol));
  sparse_grid(out, o.protocol, flags, n_peers);
  hopeless_abort(out, o, n_peers);
  unreachable_target(out, o, n_peers);
  const QuantizerSpec& q = o.protocol.quantizer;
  if (q.kind == QuantizerKind::lattice) {
    const double share = lattice_decodable_share(q.lattice_q, q.lattice_eps, o.dim);
    if (lattice_failures_expected(o))
      out.push_back("--lattice-q, --lattice-eps: q eps / 2 = " + format_number(q.lattice_q * q.lattice_eps / 2) +
                    " decodes only about " + two_digits(share * 100) + "% of the first round's messages of N(0, 1) data at --dim " + std::to_string(o.dim) +
                    " (a coordinate decodes within q eps / 2 of the receiver's): expect decode failures "
                    "(decode_failures column); a larger q or eps widens the range");
    if (q.lattice_eps >= 1 && q.lattice_eps < kMaxLatticeEps)
      out.push_back("--lattice-eps: " + format_number(q.lattice_eps) +
                    " is of the order of the data's spread (N(0, 1)): the variance the run reaches is mostly "
                    "rounding (eps^2 / 12 per coordinate), not averaging");
  }
  return out;
}

std::vector<std::string> training_warnings(const TrainingOptions& o, const ProtocolFlags& flags, int n_peers,
                                           bool simulated) {
  std::vector<std::string> out;
  simulated_only(out, simulated, "--step-flops", o.step_flops, o.stragglers, o.detection_timeout,
                 failures_possible(o) && may_wait_on_failure(o.protocol));
  sparse_grid(out, o.protocol, flags, n_peers);
  unstable_lr(out, o, n_peers);
  return out;
}

}  // namespace avb::app
