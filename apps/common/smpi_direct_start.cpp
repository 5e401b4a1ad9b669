// The SMPI build's programs are shared objects that smpirun loads into one
// simulation (scripts/smpirun.sh). Started directly, the kernel would jump to
// address 0 and the shell would say "Segmentation fault": avb_mpi_program gives
// them this entry point (and the dynamic loader, which prepares libc first), so
// that they say what to do instead. Not reached under smpirun, which dlopens the
// object and calls its main.
#include <unistd.h>

// The loader the kernel starts first (a shared object has none of its own): it
// relocates the object and prepares libc before the entry point runs.
extern "C" __attribute__((used, section(".interp"))) const char avb_interpreter[] = AVB_DYNAMIC_LINKER;

extern "C" [[noreturn]] __attribute__((force_align_arg_pointer, used)) void avb_smpi_direct_start() {
  static constexpr char kHint[] =
      "error: this program is avbench's SMPI build, which runs only inside a simulation: start it as "
      "scripts/smpirun.sh -n N build-smpi/apps/PROGRAM [FLAGS] (docs/simulation.md), or run the Open MPI build, "
      "build/apps/PROGRAM (mpirun -n N, or --engine sequential --peers N)\n";
  [[maybe_unused]] const auto written = write(STDERR_FILENO, kHint, sizeof kHint - 1);
  _exit(2);
}
