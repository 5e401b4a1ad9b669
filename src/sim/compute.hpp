// Simulated computation time.
//
// Under SMPI avbench runs with smpi/simulate-computation:no, so that simulated time
// is communication only and the same on every machine. Work that should take
// simulated time (a model's local steps, a peer's idle time between the ticks of
// its clock) is charged here explicitly. On a real MPI the work itself takes real
// time and nothing is charged: these calls return at once, and never sleep.
#pragma once

#include <string>

namespace avb {

// True when MPI_Wtime is SimGrid's simulated clock (an SMPI build).
bool time_is_simulated();

// Advances this peer's simulated clock by the time `flops` floating-point
// operations take on its host (the platform's speed for that host, so slow hosts
// take longer). Nothing under a real MPI.
void charge_flops(double flops);

// Lets `seconds` of simulated time pass for this peer, whatever its host's speed
// (waiting, not working). Nothing under a real MPI.
void idle_seconds(double seconds);

// This peer's host speed in flops/s under SMPI (what charge_flops divides by);
// 0 under a real MPI, where no flops are charged.
double host_speed();

// The most simulated time a whole run may charge, in seconds (about 32 years).
// SimGrid's clock is a double: at 1e9 s one step of it is 1.2e-7 s, about 1% of a
// 10 us link latency, so the messages a run measures are still resolved; far
// beyond, they vanish in the clock's rounding, and near 1e308 it overflows
// (SimGrid then reports a deadlock). No experiment needs a simulated time near it.
inline constexpr double kMaxSimulatedSeconds = 1e9;

// What a run charges as simulated time, at most: `computations` charges of
// `flops` (named by `flops_flag`) slowed down `slowdown` times (a straggler's
// factor, 1 without stragglers) on a host of speed `slowest_speed` (0: not
// simulated, not counted); and `waits` failure detections of `detection_timeout`
// seconds (counted on every engine: the trace's detection_time column adds them).
// `counts` says where the counts come from, e.g. "--rounds 200 x --trials 3".
struct SimulatedTimeBudget {
  double computations = 0, flops = 0;
  std::string flops_flag;
  double slowdown = 1, slowest_speed = 0;
  double waits = 0, detection_timeout = 0;
  std::string counts;
};

// Throws ConfigError naming the flag that takes the run beyond
// kMaxSimulatedSeconds (or to a time that is not finite) and the values it accepts.
void check_simulated_time(const SimulatedTimeBudget& budget);

}  // namespace avb
