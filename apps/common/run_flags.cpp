#include "common/run_flags.hpp"

namespace avb::app {

void add_run_flags(TypedOptions& add, RunOptions& o, OutputFlags& output, const RunFlagsHelp& help) {
  add.integer("--trials", o.trials, 1, 1 << 30, help.trials);
  add.seed("--seed", o.seed, "base seed of every random stream, an integer in [0, 2^64)");
  add.reals("--target", o.targets, "a number > 0", help.target);
  add.flag("--stop-at-target", o.stop_at_target, "end a trial once every target is reached");
  add.group("Output");
  add.text("--out", output.out, "FILE", "HDF5 trace to write (refused if it exists, unless --overwrite)");
  add.text("--summary", output.summary, "FILE",
           "one row per trial as CSV, or JSON if FILE ends in .json, written at the end (refused if it exists, "
           "unless --overwrite); - writes the CSV to stdout, and the table to stderr");
  add.flag("--overwrite", output.overwrite, "replace an existing --out or --summary file when the run ends");
  add.flag("--quiet", output.quiet,
           "no progress lines on stderr and no per-trial rows (the header and the means still print)");
  add.flag("--dry-run", output.dry_run,
           "print the run's estimated memory, bytes, simulated and wall time, then exit (2 if the run would be "
           "refused) without running or writing anything");
  add.integer("--progress-every", output.progress_every, 0, 86400,
              "seconds between progress lines when stderr is not a terminal (0: every round or step); on a "
              "terminal the one line is rewritten at most once a second");
}

}  // namespace avb::app
