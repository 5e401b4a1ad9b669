#include "sim/compute.hpp"

#include <mpi.h>

#ifdef AVB_ENGINE_SMPI
#include <simgrid/actor.h>
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
#else
bool time_is_simulated() { return false; }
void charge_flops(double /*flops*/) {}
void idle_seconds(double /*seconds*/) {}
#endif

}  // namespace avb
