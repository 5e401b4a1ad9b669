// Where a run's peers live: one per rank of the MPI world (mpirun, srun, or
// SimGrid's smpirun), or all of them in this one process on the sequential
// engine (run/sequential.hpp): `--engine sequential --peers N`.
#pragma once

#include <string>
#include <vector>

#include "common/trace_output.hpp"
#include "common/typed_options.hpp"
#include "core/enum_names.hpp"
#include "protocols/time_model.hpp"
#include "run/estimate.hpp"
#include "run/options.hpp"

namespace avb::app {

enum class Engine { mpi, sequential };
inline constexpr EnumNames<Engine, 2> kEngineNames{
    "--engine", {{{Engine::mpi, "mpi"}, {Engine::sequential, "sequential"}}}};

// The sequential engine's platforms: scripts/avbench platform's kinds it models.
enum class PlatformKind { cluster, cloud, geo };
inline constexpr EnumNames<PlatformKind, 3> kPlatformKindNames{
    "--platform",
    {{{PlatformKind::cluster, "cluster"}, {PlatformKind::cloud, "cloud"}, {PlatformKind::geo, "geo"}}}};

struct EngineFlags {
  Engine engine = Engine::mpi;
  int peers = 0;    // sequential: the number of peers (required)
  int threads = 0;  // sequential: trials run at once; 0: one per core
  PlatformKind platform = PlatformKind::cluster;  // sequential: the estimate's platform
  std::string platform_file;                      // --platform FILE (a SimGrid platform); empty: a kind
  PlatformModel link;                             // its settings (run_peers applies the kind's defaults)
  int regions = 0;                                // geo: --regions; 0: not given (geo's default)
  // Set by run_peers: the slowest host and link of `link`'s hosts (every draw of a
  // lognormal platform, made once), the bounds of the estimate and of the
  // simulated-time check; `link` itself on the MPI engines.
  PlatformModel slowest;
  bool platform_named = false;  // set by run_peers: the sequential engine, or SMPI given the platform flags
};

// --engine, --peers, --threads and the estimate's platform (--platform,
// --link-bandwidth, --link-latency, --backbone-bandwidth, --backbone-latency,
// --host-speed, --speed-sigma, --bw-sigma, --speed-seed), in the help group "Engine".
void add_engine_flags(TypedOptions& add, EngineFlags& flags);

// The run's peer count: the MPI world's size, or --peers on the sequential engine.
// Refuses (ConfigError naming the flag) --peers and --threads under --engine mpi,
// the platform flags on a real MPI, a platform value that is not a finite number
// > 0, a sequential run started on more than one process or without --peers, and,
// on the sequential engine, the flags that only shape simulated or measured time
// (`changed` holds the flags given). Under SMPI the platform flags describe the
// platform scripts/smpirun.sh built from them: `slowest_speed` (World's) must be
// the slowest host they describe.
int run_peers(EngineFlags& flags, const ChangedFlags& changed, int world_size, double slowest_speed);

// Under SMPI, for a waiting policy (sim/arrivals.hpp), which models every peer's
// work on flags.link: refuses (ConfigError naming --wait) a run whose simulated
// hosts are not the ones flags.link describes (a platform given to smpirun.sh but
// not to the program, or a file of the user's), since the peers it cuts would then
// differ from the other engines'. Collective over MPI_COMM_WORLD; nothing elsewhere.
void check_modelled_hosts(const EngineFlags& flags);

// The threads a sequential run may use (--threads, or one per core), and of
// those the trials that run at once for `trials` trials.
int run_cores(const EngineFlags& flags);
int run_threads(const EngineFlags& flags, int trials);

// The run's shape for its resource estimate (run/estimate.hpp): `o` resolved,
// `rounds` averaging rounds per trial at most, `threads` as run_threads gave,
// `traced` when --out writes a trace.
// The computation of a round, for the estimate: `flops` (named by `flag`) charged
// `per_round` times a round by its slowest peer, a straggler when there are any.
void charge_computation(RunShape& shape, const RunOptions& o, double flops, const std::string& flag,
                        double per_round = 1);

RunShape run_shape(const EngineFlags& flags, const RunOptions& o, int peers, int threads, std::size_t dim,
                   std::size_t model_dim, double rounds, bool traced);

// The estimate of the run: refused (ConfigError naming the flag) when it cannot
// fit, overflow or leave the simulated-time bound, unless `dry_run`, which only
// computes it for print_estimate.
RunEstimate checked_estimate(const EngineFlags& flags, const RunOptions& o, const RunShape& shape, bool dry_run);

// Warnings the estimate gives before a run: a graph whose rounds cost N^2 (the
// complete graph at thousands of peers), and a sequential run of over a minute.
std::vector<std::string> estimate_warnings(const RunOptions& o, const RunEstimate& estimate, const RunShape& shape);

// --dry-run: rank 0 prints the estimate on stdout, then the refusal the run would
// get, if any, as one error line. Returns the exit code: 0, or 2 when refused.
int print_estimate(const std::string& program, const EngineFlags& flags, const RunEstimate& estimate,
                   const RunShape& shape);

// On the sequential engine: the trace's engine, peer count and time model, and
// "engine", "peers" and the platform's four values among the options described.
void describe_engine(const EngineFlags& flags, int peers, RunStart& start);

}  // namespace avb::app
