// The local-SGD oracle as a command: prints the rows run_training would record,
// one CSV line per (trial, row), so that script tests can compare an sgd_bench
// trace with it at sizes the GoogleTest binaries cannot reach (1024 simulated
// peers, tests/scripts/test_smpi_sgd_oracle_1024.sh). No MPI calls: it runs as a
// plain process, every peer's model in one loop.
//
//   sgd_oracle_cli --peers N [sgd_bench's flags]
//
// The flags are sgd_bench's own declarations (apps/common/training_flags.hpp),
// read and resolved as the app does; --out, --quiet and --overwrite are accepted
// and ignored, so that a script can pass the oracle the very arguments it gave
// sgd_bench.
//
// Output: a header, then trial,step,round,loss,gap,relative_gap,distance,
// consensus,accuracy,alive,groups,failed_groups,bytes_sent with doubles as %.17g
// (a quadratic's accuracy is nan).
#include <cstdio>
#include <string>

#include "common/cli_checks.hpp"
#include "common/training_flags.hpp"
#include "core/error.hpp"
#include "oracle_command.hpp"
#include "sgd/trainer.hpp"
#include "sgd_oracle.hpp"

int main(int argc, char** argv) {
  const avb::app::AppPtr app =
      avb::app::make_app("The local-SGD oracle: the rows sgd_bench would record, as CSV", "sgd_oracle_cli");
  avb::app::TrainingCli cli;
  avb::app::define_training_flags(*app, cli);
  return avb::oracle::run_command(*app, argc, argv, [&](int n) {
    const avb::TrainingOptions o = avb::app::training_options(cli, n);  // run_training_trial resolves again
    std::printf("trial,step,round,loss,gap,relative_gap,distance,consensus,accuracy,alive,groups,failed_groups,"
                "bytes_sent\n");
    for (int k = 0; k < o.trials; ++k) {
      const avb::oracle::TrainingOutcome outcome = avb::oracle::run_training_trial(o, n, k);
      for (const avb::TrainingRow& r : outcome.trial.rows)
        std::printf("%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d,%d,%d,%llu\n", k, r.step, r.round, r.loss,
                    r.gap, r.relative_gap, r.distance, r.consensus, r.accuracy, r.alive, r.groups, r.failed_groups,
                    static_cast<unsigned long long>(r.bytes_sent));
    }
  });
}
