// The sequential oracle as a command: prints the rows run_averaging would record,
// one CSV line per (trial, round), so that script tests can compare a real run's
// trace with it at sizes the GoogleTest binaries cannot reach (1024 simulated
// peers). No MPI calls: it runs as a plain process.
//
//   oracle_cli --peers N [averaging_bench's flags]
//
// The flags are averaging_bench's own declarations (apps/common/averaging_flags.hpp),
// read and resolved as the app does; --out, --quiet and --overwrite are accepted
// and ignored.
#include <cstdio>
#include <string>

#include "averaging_oracle.hpp"
#include "common/averaging_flags.hpp"
#include "common/cli_checks.hpp"
#include "core/error.hpp"
#include "oracle_command.hpp"
#include "run/averaging.hpp"

int main(int argc, char** argv) {
  const avb::app::AppPtr app =
      avb::app::make_app("The averaging oracle: the rows averaging_bench would record, as CSV", "oracle_cli");
  avb::app::AveragingCli cli;
  avb::app::define_averaging_flags(*app, cli);
  return avb::oracle::run_command(*app, argc, argv, [&](int n) {
    const avb::AveragingOptions o = avb::app::averaging_options(cli, n);
    std::printf("trial,round,variance,error,mean_drift,alive,groups,failed_groups,decode_failures,bytes_sent\n");
    for (int k = 0; k < o.trials; ++k) {
      const avb::TrialRecord record = avb::oracle::run_trial(o, n, k);
      for (const auto& r : record.rows)
        std::printf("%d,%d,%.17g,%.17g,%.17g,%d,%d,%d,%d,%llu\n", k, r.round, r.variance, r.error, r.mean_drift,
                    r.alive, r.groups, r.failed_groups, r.decode_failures,
                    static_cast<unsigned long long>(r.bytes_sent));
    }
  });
}
