// The sequential oracle as a command: prints the rows run_averaging would record,
// one CSV line per (trial, round), so that script tests can compare a real run's
// trace with it at sizes the GoogleTest binaries cannot reach (1024 simulated
// peers). No MPI calls: it runs as a plain process.
//
//   oracle_cli --peers N [--protocol P] [--fail-rate p] [--failure K] [--on-failure S]
//              [--dim D] [--rounds R] [--trials T] [--seed S] [--grid G] [--placement P]
//              [--key-update K] [--group-size G] [--topology T] [--weights W]
//              [--alive-weights A] [--collective C] [--quantizer Q] [--lattice-q q]
//              [--lattice-eps e]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "averaging_oracle.hpp"
#include "core/error.hpp"
#include "protocols/compress.hpp"
#include "protocols/gossip.hpp"
#include "protocols/grid.hpp"
#include "run/averaging.hpp"

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  if (argc % 2 == 0 || !flags.count("--peers")) {
    std::fprintf(stderr, "usage: oracle_cli --peers N [--flag value ...]\n");
    return 2;
  }
  auto get = [&](const char* flag, const char* fallback) {
    auto it = flags.find(flag);
    return it == flags.end() ? std::string(fallback) : it->second;
  };
  try {
    const int n = std::stoi(get("--peers", "1"));
    avb::AveragingOptions o;
    o.protocol.name = get("--protocol", "allreduce");
    o.fail_rate = std::stod(get("--fail-rate", "0"));
    o.failure = avb::parse_failure_kind(get("--failure", "transient"));
    if (flags.count("--on-failure")) o.protocol.on_failure = avb::parse_failure_semantics(get("--on-failure", ""));
    o.protocol.collective = avb::parse_collective(get("--collective", "auto"));
    if (flags.count("--grid")) o.protocol.grid = avb::parse_grid(get("--grid", ""));
    o.protocol.placement = avb::parse_placement(get("--placement", "random"));
    o.protocol.key_update = avb::parse_key_update(get("--key-update", "axis"));
    o.protocol.group_size = std::stoi(get("--group-size", "32"));
    if (flags.count("--topology")) o.protocol.topology = avb::parse_topology(get("--topology", ""));
    o.protocol.weights = avb::parse_weights(get("--weights", "uniform"));
    o.protocol.alive_weights = avb::parse_alive_weights(get("--alive-weights", "renormalize"));
    o.protocol.quantizer = avb::parse_quantizer(
        get("--quantizer", "none"), std::stoll(get("--lattice-q", std::to_string(avb::kDefaultLatticeQ).c_str())),
        flags.count("--lattice-eps") ? std::stod(get("--lattice-eps", "")) : avb::kDefaultLatticeEps);
    o.dim = std::stoi(get("--dim", "1"));
    o.rounds = std::stoi(get("--rounds", "50"));
    o.trials = std::stoi(get("--trials", "10"));
    o.seed = std::stoull(get("--seed", "0"));
    std::printf("trial,round,variance,error,mean_drift,alive,groups,failed_groups,decode_failures,bytes_sent\n");
    for (int k = 0; k < o.trials; ++k) {
      const avb::TrialRecord record = avb::oracle::run_trial(o, n, k);
      for (const auto& r : record.rows)
        std::printf("%d,%d,%.17g,%.17g,%.17g,%d,%d,%d,%d,%llu\n", k, r.round, r.variance, r.error, r.mean_drift,
                    r.alive, r.groups, r.failed_groups, r.decode_failures, static_cast<unsigned long long>(r.bytes_sent));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oracle_cli: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
