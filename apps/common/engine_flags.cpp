#include "common/engine_flags.hpp"
#include "common/flag_values.hpp"
#include "common/mpi_entry.hpp"
#include "common/platform_file.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

#include "core/comm.hpp"
#include "protocols/protocol.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "sim/compute.hpp"

namespace avb::app {

namespace {
// Flags the sequential engine has no use for: a watchdog of real rounds.
constexpr const char* kMpiOnlyFlags[] = {"--round-timeout"};

// The sequential engine's platform: each flag, its field, and the flag of
// scripts/smpirun.sh (avbench platform) that sets the same value under SMPI.
struct PlatformFlag {
  const char* flag;
  double PlatformModel::*field;
  const char* unit;
  const char* smpi_flag;
};
constexpr PlatformFlag kPlatformFlags[] = {
    {"--link-bandwidth", &PlatformModel::bandwidth, "bytes/s", "--bw"},
    {"--link-latency", &PlatformModel::link_latency, "seconds", "--lat"},
    {"--backbone-bandwidth", &PlatformModel::backbone, "bytes/s", "--bb-bw"},
    {"--backbone-latency", &PlatformModel::backbone_latency, "seconds", "--bb-lat"},
    {"--host-speed", &PlatformModel::host_speed, "flops/s", "--speed"},
    {"--wan-latency", &PlatformModel::wan_latency, "seconds", "--wan-lat"},
    {"--wan-bandwidth", &PlatformModel::wan_bandwidth, "bytes/s", "--wan-bw"},
};
// The flags of geo alone (avbench platform's defaults: 4 regions).
constexpr const char* kGeoFlags[] = {"--regions", "--wan-latency", "--wan-bandwidth"};
constexpr int kGeoRegions = 4;
// Lognormal hosts: sigma of log(speed) and of log(bandwidth), smpirun.sh's names.
struct SigmaFlag {
  const char* flag;
  double PlatformModel::*field;
  const char* what;
};
constexpr SigmaFlag kSigmaFlags[] = {
    {"--speed-sigma", &PlatformModel::speed_sigma, "host speeds"},
    {"--bw-sigma", &PlatformModel::bandwidth_sigma, "link bandwidths"},
};
// avbench platform's cloud: both spreads 0.5 unless given.
constexpr double kCloudSigma = 0.5;
// exp(10 z) stays finite for any z a double's uniform draw yields (|z| < 40).
constexpr double kMaxSigma = 10;
constexpr const char* kPlatformOnlyFlags[] = {"--platform", "--speed-sigma", "--bw-sigma", "--speed-seed", "--regions"};
// The threads a run starts after its estimate: the sequential engine's workers.
int extra_threads(const RunShape& shape) { return shape.sequential ? std::min(shape.threads, shape.trials) : 0; }

}  // namespace

void add_engine_flags(TypedOptions& add, EngineFlags& flags) {
  add.group("Engine");
  add.word("--engine", flags.engine, kEngineNames,
           "mpi: one peer per MPI rank (mpirun, srun, smpirun); sequential: every peer in this process, "
           "the same values, time an alpha-beta estimate");
  // 0 is accepted as "not given": a trace's /config text lists every flag, defaults
  // included, and must replay under --engine mpi.
  add.integer("--peers", flags.peers, 0, 1 << 24,
              "sequential engine: the number of peers, an integer in [1, 2^24] (0, the default: none given)");
  add.integer("--threads", flags.threads, 0, 1024,
              "sequential engine: trials run at once, an integer in [0, 1024] (0: one per core); results do not "
              "depend on it");
  add.custom("--platform", "cluster", "{" + kPlatformKindNames.list(",") + "} or FILE",
             "the simulated platform, scripts/avbench platform's kind of that name: the sequential engine's time "
             "estimate, and under SMPI the platform scripts/smpirun.sh builds from this and the flags below (refused "
             "on a real MPI); cloud: lognormal host speeds and link bandwidths, --speed-sigma "
             "and --bw-sigma 0.5 unless given; geo: --regions clusters joined pairwise by wide-area links. A FILE "
             "is a SimGrid platform of one cluster (docs/simulation.md), which the program reads itself",
             [&flags](const std::string& text) {
               for (const auto& e : kPlatformKindNames.entries)
                 if (e.name == text) {
                   flags.platform = e.value;
                   flags.platform_file.clear();
                   return;
                 }
               if (text.find('/') == std::string::npos && text.find('.') == std::string::npos)
                 throw ConfigError("--platform: '" + text + "' is not one of {" + kPlatformKindNames.list(", ") +
                                   "} nor a platform file (a path such as ./mine.xml)");
               flags.platform = PlatformKind::cluster;
               flags.platform_file = text;
             });
  add.integer("--regions", flags.regions, 0, 1 << 24,
              "the simulated platform, --platform geo: the number of regions, an integer in [2, --peers] (0, the "
              "default: 4; scripts/smpirun.sh --regions)");
  for (const PlatformFlag& p : kPlatformFlags)
    add.real(p.flag, flags.link.*p.field, std::string("a number > 0 (") + p.unit + ")",
             std::string("the simulated platform (--platform), in ") + p.unit + " (scripts/smpirun.sh " +
                 p.smpi_flag + ")");
  for (const SigmaFlag& s : kSigmaFlags)
    add.real(s.flag, flags.link.*s.field, "a number in [0, 10]",
             std::string("the simulated platform: the spread (sigma of the logarithm) of the ") + s.what +
                 " around their medians, keyed by (--speed-seed, host) as scripts/smpirun.sh " + s.flag +
                 " draws them");
  add.seed("--speed-seed", flags.link.seed,
           "the simulated platform: the seed of the lognormal hosts, an integer in [0, 2^64) (scripts/smpirun.sh "
           "--speed-seed)");
}

namespace {

// The first platform flag given (but --platform itself with `others_only`), or "".
std::string first_platform_flag(const ChangedFlags& changed, bool others_only = false) {
  for (const PlatformFlag& p : kPlatformFlags)
    if (changed.count(p.flag) != 0) return p.flag;
  for (const char* flag : kPlatformOnlyFlags)
    if (changed.count(flag) != 0 && !(others_only && std::string(flag) == "--platform")) return flag;
  return "";
}

void check_platform_values(const EngineFlags& flags) {
  for (const PlatformFlag& p : kPlatformFlags) {
    const double v = flags.link.*p.field;
    if (!(v > 0) || !std::isfinite(v))
      throw ConfigError(std::string(p.flag) + ": " + format_number(v) + " is not a number > 0 (" + p.unit + ")");
  }
}

// Under SMPI the platform file is smpirun.sh's: the hosts it simulates must be the
// ones the flags describe. Their slowest speed is what both know (the same on
// every rank); a cluster started for a cloud run, or another seed, shows there.
void check_simulated_hosts(double expected, double actual) {
  if (std::abs(expected - actual) <= 1e-9 * expected) return;
  throw ConfigError("--platform: the simulated hosts are not the ones the platform flags describe (the slowest runs "
                    "at " + format_number(actual) + " flop/s, the flags say " + format_number(expected) +
                    "); start the program with scripts/smpirun.sh and no platform options of its own: it builds "
                    "the platform from the program's flags");
}

// The kind's defaults and the spreads' checks (avbench platform's); a platform file's
// hosts, which no other platform flag may then describe.
void resolve_platform(EngineFlags& flags, const ChangedFlags& changed) {
  PlatformModel& p = flags.link;
  if (!flags.platform_file.empty()) {
    const std::string other = first_platform_flag(changed, true);
    if (!other.empty())
      throw ConfigError(other + ": the platform file " + flags.platform_file + " describes the hosts already");
    p = read_platform_file(flags.platform_file, flags.peers);
    return;
  }
  if (flags.platform == PlatformKind::cloud) {
    if (changed.count("--speed-sigma") == 0) p.speed_sigma = kCloudSigma;
    if (changed.count("--bw-sigma") == 0) p.bandwidth_sigma = kCloudSigma;
  } else if (changed.count("--bw-sigma") != 0) {
    throw ConfigError("--bw-sigma: applies to --platform cloud only (the cluster's links are equal)");
  }
  if (flags.platform == PlatformKind::geo) {
    p.regions = flags.regions == 0 ? kGeoRegions : flags.regions;
    if (!(p.regions >= 2 && p.regions <= flags.peers))
      throw ConfigError("--regions: " + std::to_string(p.regions) + " is not an integer in [2, --peers] (here " +
                        std::to_string(flags.peers) + ")");
    if (p.speed_sigma != 0)
      throw ConfigError("--speed-sigma: applies to --platform cluster or cloud (geo's regions are homogeneous "
                        "clusters, as scripts/avbench platform writes them)");
  } else {
    for (const char* flag : kGeoFlags)
      if (changed.count(flag) != 0) throw ConfigError(std::string(flag) + ": applies to --platform geo only");
    p.regions = 1;
  }
  for (const SigmaFlag& s : kSigmaFlags) {
    const double v = p.*s.field;
    if (!(v >= 0 && v <= kMaxSigma))
      throw ConfigError(std::string(s.flag) + ": " + format_number(v) + " is not a number in [0, 10]");
  }
}

}  // namespace

void check_modelled_hosts(const EngineFlags& flags) {
  if (flags.engine == Engine::sequential || !time_is_simulated()) return;
  int rank = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  const double model = flags.link.speed_of(rank);
  if (max_over_ranks(std::abs(host_speed() - model) <= 1e-9 * model ? 0 : 1) != 0)
    throw ConfigError("--wait: the simulated hosts are not the platform the program was given, so the late peers "
                      "would not be the other engines'; name the platform to the program (e.g. --platform cloud) "
                      "and let scripts/smpirun.sh build it from there");
}

int run_peers(EngineFlags& flags, const ChangedFlags& changed, int world_size, double slowest_speed) {
  if (flags.engine == Engine::mpi) {
    flags.slowest = flags.link;
    for (const char* flag : {"--peers", "--threads"})
      if (changed.count(flag) != 0)
        throw ConfigError(std::string(flag) + ": applies to --engine sequential only; under --engine mpi the peers are "
                          "the MPI ranks (here " + std::to_string(world_size) + ")");
    const std::string given = first_platform_flag(changed);
    if (given.empty()) return world_size;
    if (engine_name() != "smpi")
      throw ConfigError(given + ": describes a simulated platform: for --engine sequential, or under SMPI through "
                        "scripts/smpirun.sh, which builds the platform from it; a real MPI runs on the machines it has");
    check_platform_values(flags);
    flags.peers = world_size;  // for the checks against the peers (geo's regions)
    resolve_platform(flags, changed);
    flags.peers = 0;
    flags.slowest = slowest_hosts(flags.link, world_size);
    check_simulated_hosts(flags.slowest.host_speed, slowest_speed);
    flags.platform_named = true;
    return world_size;
  }
  check_platform_values(flags);
  if (world_size > 1)
    throw ConfigError("--engine sequential: runs every peer in one process, but " + std::to_string(world_size) +
                      " were started; run it without mpirun");
  if (flags.peers < 1)
    throw ConfigError("--peers: required with --engine sequential; accepted: an integer in [1, 2^24]");
  resolve_platform(flags, changed);
  flags.slowest = slowest_hosts(flags.link, flags.peers);
  flags.platform_named = true;
  for (const char* flag : kMpiOnlyFlags)
    if (changed.count(flag) != 0)
      throw ConfigError(std::string(flag) + ": watches the rounds of MPI peers, which can hang on a lost "
                        "message; --engine sequential has no messages to lose (use --engine mpi)");
  return flags.peers;
}

int run_cores(const EngineFlags& flags) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return flags.threads > 0 ? flags.threads : cores;
}

int run_threads(const EngineFlags& flags, int trials) { return std::clamp(run_cores(flags), 1, std::max(trials, 1)); }

void describe_engine(const EngineFlags& flags, int peers, RunStart& start) {
  if (flags.engine == Engine::sequential) {
    start.info.engine = "sequential";
    start.info.mpi_library = "every peer in this process; time is an alpha-beta estimate";
    start.info.n_peers = peers;
    start.info.time_model = "alpha-beta estimate";
    start.described.emplace_back("engine", "sequential");
    start.described.emplace_back("peers", std::to_string(peers));
  }
  if (!flags.platform_named) return;  // SMPI without the flags: smpirun.sh's own platform
  start.described.emplace_back("platform", flags.platform_file.empty() ? std::string(kPlatformKindNames.name(flags.platform))
                                                                        : flags.platform_file);
  for (const PlatformFlag& p : kPlatformFlags)  // named without the leading "--", as the other options
    start.described.emplace_back(std::string(p.flag).substr(2), format_number(flags.link.*p.field));
  for (const SigmaFlag& s : kSigmaFlags) start.described.emplace_back(std::string(s.flag).substr(2), format_number(flags.link.*s.field));
  start.described.emplace_back("speed-seed", std::to_string(flags.link.seed));
  start.described.emplace_back("regions", std::to_string(flags.link.regions));
}

RunShape run_shape(const EngineFlags& flags, const RunOptions& o, int peers, int threads, std::size_t dim,
                   std::size_t model_dim, double rounds, bool traced) {
  RunShape shape;
  shape.traced = traced;
  shape.peers = peers;
  shape.dim = dim;
  shape.model_dim = model_dim;
  shape.rounds = rounds;
  shape.trials = o.trials;
  shape.failures = failures_possible(o);
  shape.churn = has_joiners(o.failure);
  shape.detection_timeout = o.detection_timeout;
  shape.sequential = flags.engine == Engine::sequential;
  shape.threads = threads;
  shape.peers_here = shape.sequential ? 1 : peers_on_this_machine(peers, 0);
  shape.shared_padding = engine_name() == "smpi";
  if (failures_possible(o) && FailureModel::bytes_per_peer(o.failure) > 0)  // per trial in flight (MPI: per rank)
    shape.workload.push_back({"failure model", "--failure",
                              (shape.sequential ? std::min(threads, o.trials) : shape.peers_here) * double(peers) *
                                  FailureModel::bytes_per_peer(o.failure)});
  if (flags.link.listed_speeds != nullptr)  // a platform file's hosts and regions, read by every rank (the sequential engine: once)
    shape.workload.push_back(
        {"platform file", "--platform",
         shape.peers_here * (2.0 * sizeof(double) * static_cast<double>(flags.link.listed_speeds->size()) +
                             (flags.link.listed_regions ? flags.link.listed_regions->bytes() : 0.0))});
  if (o.availability != nullptr)  // read by every rank (the sequential engine: once)
    shape.workload.push_back({"availability trace", "--availability",
                              shape.peers_here * static_cast<double>(o.availability->bytes())});
  return shape;
}

void charge_computation(RunShape& shape, const RunOptions& o, double flops, const std::string& flag, double per_round) {
  // Lognormal work: a round waits for about the largest of N draws, exp(sigma sqrt(2 ln N)).
  const double jitter = std::exp(o.stragglers.sigma * std::sqrt(2.0 * std::log(std::max(2.0, double(shape.peers)))));
  shape.compute_flops = flops * per_round * (o.stragglers.fraction > 0 ? o.stragglers.slowdown : 1.0) * jitter;
  shape.compute_flag = flag;
  shape.compute_flag_value = flops;
  // The sequential engine's compute clock lists each trial's stragglers (an int
  // each, in a vector that may have grown to twice that).
  if (shape.sequential && flops > 0 && o.stragglers.fraction > 0)
    shape.workload.push_back({"stragglers", "--stragglers",
                              std::min(shape.threads, shape.trials) * 2.0 * sizeof(int) * o.stragglers.fraction *
                                  shape.peers});
  // It charges per-peer work (a double each) when the work varies by round or a
  // waiting policy cuts it.
  if (shape.sequential && flops > 0 && (o.stragglers.sigma > 0 || o.protocol.wait.policy != WaitPolicy::all))
    shape.workload.push_back({"per-peer work", o.stragglers.sigma > 0 ? "--straggler-sigma" : "--wait",
                              std::min(shape.threads, shape.trials) * double(sizeof(double)) * shape.peers});
}

RunEstimate checked_estimate(const EngineFlags& flags, const RunOptions& o, const RunShape& shape, bool dry_run) {
  // Lognormal hosts: the estimate's bounds are the slowest host and link.
  const RunEstimate estimate = estimate_run(o.protocol, shape, flags.slowest);
  if (!dry_run) check_run_estimate(estimate, shape, flags.slowest, memory_available(extra_threads(shape)));
  return estimate;
}

std::vector<std::string> estimate_warnings(const RunOptions& o, const RunEstimate& estimate, const RunShape& shape) {
  std::vector<std::string> out;
  auto text = [](double v) {
    char t[32];
    std::snprintf(t, sizeof t, "%.3g", v);
    return std::string(t);
  };
  const double n = shape.peers;
  // A peer of the complete graph mixes all N values a round: inherent, not a
  // structure rebuilt, but it makes a round cost N^2 whatever the engine. An
  // asynchronous protocol's peer meets one neighbour a tick, drawn, not walked.
  constexpr double kQuadraticEdges = 1 << 24;
  if (o.protocol.topology && o.protocol.topology->kind == TopologyKind::complete && n * (n - 1) > kQuadraticEdges &&
      !protocol_info(o.protocol.name).asynchronous)
    out.push_back("--topology complete on " + std::to_string(shape.peers) + " peers: each round walks N(N-1) = " +
                  text(n * (n - 1)) + " edges" +
                  (shape.sequential ? ", about " + text(estimate.wall_seconds / std::max(1.0, shape.rounds) *
                                                       std::min(shape.threads, shape.trials) / shape.trials) +
                                          " s a round here"
                                    : std::string()) +
                  "; the cost grows as N^2 (a sparse --topology such as exp keeps it linear)");
  constexpr double kLongRun = 60;
  if (shape.sequential && estimate.wall_seconds > kLongRun)
    out.push_back("the estimate says this run takes about " + text(estimate.wall_seconds / 60) +
                  " min of wall time (--dry-run prints the whole estimate)");
  return out;
}

int print_estimate(const std::string& program, const EngineFlags& flags, const RunEstimate& estimate,
                   const RunShape& shape) {
  std::string refusal;
  try {
    check_run_estimate(estimate, shape, flags.slowest, memory_available(extra_threads(shape)));
  } catch (const ConfigError& e) {
    refusal = e.what();
  }
  // One verdict for every rank, as options_agreed gives: a rank's estimate may
  // count what others do not hold (rank 0 reads a --data file) or see less memory.
  const int refused = refusal.empty() ? 0 : 1, anywhere = max_over_ranks(refused);
  if (world_rank() == 0) {
    for (const std::string& line : describe_estimate(estimate, shape, memory_available(extra_threads(shape))))
      std::fprintf(table_out(), "# estimate: %s\n", line.c_str());
    std::fflush(table_out());
    if (anywhere != 0)
      report_error(program, refused != 0 ? refusal
                                         : "the run does not fit on every node: another rank's estimate refused it");
  }
  return anywhere != 0 ? 2 : 0;
}

}  // namespace avb::app
