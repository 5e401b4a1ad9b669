// A run's resources, known before it starts: the memory it needs on this machine,
// the bytes its counters reach, its simulated time per trial and about how long it
// takes. The protocol's share comes from its catalog row (protocols/resources.hpp);
// this adds the runner's own arrays, the graph, the padding buffers of --model-dim
// and the records in flight, and multiplies by rounds, trials and threads.
//
// check_run_estimate() refuses, with one ConfigError naming the flag to change,
// a run that cannot fit in memory, whose bytes_sent counter could wrap, or whose
// simulated time would leave kMaxSimulatedSeconds or not be finite. The apps call
// it before anything is written; --dry-run prints describe_estimate().
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "protocols/protocol.hpp"
#include "protocols/time_model.hpp"

namespace avb {

// One component of the memory estimate and the flag that makes it grow.
struct MemoryPart {
  std::string what;  // "peer vectors", "graph", "padding buffers", ...
  std::string flag;  // "--dim", "--topology", "--model-dim", ...
  double bytes = 0;
};

// What the estimate needs to know of a run besides its protocol.
struct RunShape {
  int peers = 1;
  std::size_t dim = 1;
  std::size_t model_dim = 1;
  std::string dim_flag = "--dim";  // the flag that makes dim smaller (empty: none, the data's)
  double rounds = 0;         // averaging rounds per trial (sgd_bench: at most one per step)
  int trials = 1;
  bool failures = false;     // any peer can be down in a round (detection may be charged)
  bool churn = false;        // joiners copy a model each round
  double detection_timeout = 0;
  bool sequential = false;   // the sequential engine (else an MPI engine)
  int threads = 1;           // sequential: trials run at once
  int peers_here = 1;        // MPI: ranks on this machine (SMPI: all of them)
  bool shared_padding = false;  // SMPI: --model-dim's padding is one shared mapping (core/padding.hpp)
  bool traced = false;       // --out: each trial adds its rows to the trace
  // The computation a round charges its slowest peer (a straggler's slow-down
  // included), in flops, and the flag that sets it with that flag's value.
  double compute_flops = 0;
  std::string compute_flag;
  double compute_flag_value = 0;
  // The workload besides averaging (sgd_bench's problem: sgd/problem.hpp problem_cost).
  std::vector<MemoryPart> workload;  // on this machine, held for the whole run
  double workload_vectors = 0;       // sequential: vectors per peer of each trial in flight
  double setup_seconds = 0;          // sequential: building it, before the first trial
  double workload_trial_seconds = 0; // sequential: its share of one trial's wall time
};

struct RunEstimate {
  std::vector<MemoryPart> memory;  // on this machine, at the peak
  double memory_bytes = 0;         // their sum
  double round_bytes = 0;          // all peers, one round, at most
  double trial_bytes = 0;          // the bytes_sent counter at a trial's end, at most
  MessagePattern pattern;          // the busiest round's messages
  double round_seconds = 0;        // sequential engine: simulated seconds of one round, at most
  double trial_seconds = 0;        // sequential engine: simulated seconds of one trial, at most
  double wall_seconds = 0;         // sequential engine: about this long to run (0: not estimated)
};

// The largest bytes_sent a trace may hold: the counter is unsigned 64-bit, and
// per-peer figures divide it as a signed 64-bit integer.
inline constexpr double kMaxCountedBytes = 9.2e18;

RunEstimate estimate_run(const ProtocolOptions& protocol, const RunShape& shape, const PlatformModel& link);

// The memory a run may use here: physical memory less the program's own, or the
// address-space limit (ulimit -v) when that is lower, less what is mapped already
// and what each of `threads` more threads will map.
double memory_available(int threads);

// Throws ConfigError naming the flag to change and the estimate when the run
// cannot fit in `available` bytes, its bytes counter could wrap, or (sequential
// engine) its simulated time leaves kMaxSimulatedSeconds.
void check_run_estimate(const RunEstimate& estimate, const RunShape& shape, const PlatformModel& link, double available);

// The estimate as lines of text ("memory: ...", "bytes: ...", ...), for --dry-run.
std::vector<std::string> describe_estimate(const RunEstimate& estimate, const RunShape& shape, double available);

}  // namespace avb
