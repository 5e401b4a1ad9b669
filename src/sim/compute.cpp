#include "sim/compute.hpp"

#include <mpi.h>

#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/format.hpp"

#ifdef AVB_ENGINE_SMPI
#include <simgrid/actor.h>
#include <simgrid/host.h>
#include <smpi/smpi.h>
#endif

namespace avb {

#ifdef AVB_ENGINE_SMPI
bool time_is_simulated() { return true; }
void charge_flops(double flops) {
  if (flops > 0) smpi_execute_flops(flops);
}
// Every simulated peer is a SimGrid actor.
void idle_seconds(double seconds) {
  if (seconds > 0) sg_actor_sleep_for(seconds);
}
double host_speed() { return sg_host_get_speed(sg_host_self()); }
#else
bool time_is_simulated() { return false; }
void charge_flops(double /*flops*/) {}
void idle_seconds(double /*seconds*/) {}
double host_speed() { return 0.0; }
#endif

namespace {
// Three significant digits, rounded down when `down` (an upper bound that is
// shown must itself be accepted).
std::string short_number(double v, bool down) {
  if (down && v > 0 && std::isfinite(v)) {
    const double unit = std::pow(10.0, std::floor(std::log10(v)) - 2);
    v = std::floor(v / unit) * unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}
}  // namespace

void check_simulated_time(const SimulatedTimeBudget& b) {
  const bool simulated = b.slowest_speed > 0 && b.flops > 0;
  // Per unit of each flag's value, the seconds it adds over the run.
  const double per_flop = simulated ? b.computations * b.slowdown / b.slowest_speed : 0.0;
  const double per_flop_unslowed = simulated ? b.computations / b.slowest_speed : 0.0;
  const double compute = per_flop * b.flops, waiting = b.waits * b.detection_timeout;
  const double total = compute + waiting;
  if (std::isfinite(total) && total <= kMaxSimulatedSeconds) return;
  const std::string beyond = "would take the run's simulated time to " + short_number(total, false) + " s (" + b.counts +
                             "), beyond the " + format_number(kMaxSimulatedSeconds) +
                             " s a run may simulate (about 32 years; docs/failures.md); accepted";
  auto most = [](double room, double per_unit) { return short_number(room > 0 ? room / per_unit : 0.0, true); };
  if (waiting >= compute || !std::isfinite(waiting)) {
    throw ConfigError("--detection-timeout: " + format_number(b.detection_timeout) + " " + beyond +
                      ": a number in [0, " + most(kMaxSimulatedSeconds - compute, b.waits) + "] (seconds)");
  }
  // The computation: the slowdown's fault if the run would fit without it.
  if (b.slowdown > 1 && std::isfinite(per_flop_unslowed * b.flops) &&
      per_flop_unslowed * b.flops + waiting <= kMaxSimulatedSeconds) {
    throw ConfigError("--straggler-slowdown: " + format_number(b.slowdown) + " " + beyond + " with " + b.flops_flag +
                      " " + format_number(b.flops) + ": a number in [1, " +
                      most(kMaxSimulatedSeconds - waiting, per_flop_unslowed * b.flops) + "]");
  }
  throw ConfigError(b.flops_flag + ": " + format_number(b.flops) + " " + beyond + " on the slowest host (" +
                    format_number(b.slowest_speed) + " flops/s): a number in [0, " +
                    most(kMaxSimulatedSeconds - waiting, per_flop) + "]");
}

}  // namespace avb
