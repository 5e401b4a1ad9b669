#include "sim/compute.hpp"

#include <mpi.h>

#ifdef AVB_ENGINE_SMPI
#include <smpi/smpi.h>
#endif

namespace avb {

namespace {
constexpr double kReferenceFlopsPerSecond = 1e9;  // smpirun.sh passes smpi/host-speed:1Gf
}

#ifdef AVB_ENGINE_SMPI
bool time_is_simulated() { return true; }
void charge_flops(double flops) {
  if (flops > 0) smpi_execute_flops(flops);
}
#else
bool time_is_simulated() { return false; }
void charge_flops(double /*flops*/) {}
#endif

void charge_seconds(double seconds) { charge_flops(seconds * kReferenceFlopsPerSecond); }

}  // namespace avb
