// Simulated computation time.
//
// Under SMPI avbench runs with smpi/simulate-computation:no, so that simulated time
// is communication only and the same on every machine. Work that should take
// simulated time (a model's local steps, a peer's idle time between the ticks of
// its clock) is charged here explicitly. On a real MPI the work itself takes real
// time and nothing is charged: these calls return at once, and never sleep.
#pragma once

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

}  // namespace avb
