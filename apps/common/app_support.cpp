#include "common/app_support.hpp"

#include <mpi.h>

#include <csignal>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace avb::app {

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;  // see install_stop_handlers()
extern "C" void on_stop_signal(int signo) { g_stop_signal = signo; }

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

struct MeanSe {
  double mean = 0, se = 0;
};
MeanSe mean_se(const std::vector<double>& v) {
  MeanSe r;
  if (v.empty()) return r;
  for (double x : v) r.mean += x;
  r.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.se = std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  return r;
}
}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int stop_signal() { return g_stop_signal; }

void report_error(const std::string& program, const std::string& message) {
  if (world_rank() != 0) return;
  std::string line = message;
  for (char& c : line)
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), line.c_str());
  std::fflush(stderr);
}

std::string join_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_of(" \t\"'\\$`") == std::string::npos;
    line += plain ? arg : "'" + arg + "'";
  }
  return line;
}

std::string format_number(double v) {
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream s;
    s.precision(p);
    s << v;
    if (std::stod(s.str()) == v) return s.str();
  }
  return std::to_string(v);
}

Reporter::Reporter(const AveragingOptions& options, std::unique_ptr<TraceWriter> trace, bool quiet)
    : options_(options), trace_(std::move(trace)), quiet_(quiet) {}

void Reporter::print_header(const std::string& program, const RunInfo& info, const KeyValues& options) const {
  std::printf("# %s %s (git %s)\n", program.c_str(), info.avbench_version.c_str(), info.git_sha.c_str());
  std::printf("# engine: %s (%s), peers: %d\n", info.engine.c_str(), info.mpi_library.c_str(), info.n_peers);
  std::string line;
  for (const auto& [k, v] : options) line += " " + k + "=" + v;
  std::printf("# options:%s\n", line.c_str());
  if (trace_) std::printf("# trace: %s\n", trace_->path().c_str());
  std::printf("#\n# %5s %20s", "trial", "seed");
  for (double t : options_.targets) std::printf(" %11s", ("to " + target_attribute_name(t).substr(10)).c_str());
  std::printf(" %14s %14s %12s\n", "final var", "bytes/peer", "time [s]");
  std::fflush(stdout);
}

void Reporter::on_round(const TrialRecord& trial, const RoundRow& row) {
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::seconds(2)) return;
  last_progress_ = now;
  const double wall = std::chrono::duration<double>(now - started_).count();
  std::fprintf(stderr, "[%.0fs] trial %d/%d, round %d/%d, variance %.3e\n", wall, trial.index + 1, options_.trials,
               row.round, options_.rounds, row.variance);
  std::fflush(stderr);
}

void Reporter::on_trial(const TrialRecord& trial) {
  if (trace_) trace_->write_trial(trial);
  const RoundRow& last = trial.rows.back();
  std::printf("  %5d %20llu", trial.index, static_cast<unsigned long long>(trial.seed));
  for (const auto& t : trial.targets) {
    std::string cell = std::to_string(t.rounds) + (t.reached ? " " : "*");
    std::printf(" %11s", cell.c_str());
  }
  const double per_peer = peers_ > 0 ? static_cast<double>(last.bytes_sent) / peers_ : 0.0;
  std::printf(" %14.3e %14.1f %12.4e%s\n", last.variance, per_peer, last.time, trial.complete ? "" : "  (cut short)");
  std::fflush(stdout);
}

void Reporter::finish(const std::vector<TrialRecord>& trials, bool complete) {
  std::vector<std::vector<double>> rounds(options_.targets.size());
  std::vector<double> variance, bytes, time;
  bool capped = false;
  for (const auto& trial : trials) {
    for (std::size_t i = 0; i < trial.targets.size() && i < rounds.size(); ++i) {
      rounds[i].push_back(trial.targets[i].rounds);
      capped = capped || !trial.targets[i].reached;
    }
    variance.push_back(trial.rows.back().variance);
    bytes.push_back(peers_ > 0 ? static_cast<double>(trial.rows.back().bytes_sent) / peers_ : 0.0);
    time.push_back(trial.rows.back().time);
  }
  std::printf("# %5s %20s", "mean", "");
  for (const auto& r : rounds) std::printf(" %11.3f", mean_se(r).mean);
  std::printf(" %14.3e %14.1f %12.4e\n", mean_se(variance).mean, mean_se(bytes).mean, mean_se(time).mean);
  std::printf("# %5s %20s", "± se", "");
  for (const auto& r : rounds) std::printf(" %11.3f", mean_se(r).se);
  std::printf(" %14.3e %14.1f %12.4e\n", mean_se(variance).se, mean_se(bytes).se, mean_se(time).se);
  if (capped) std::printf("# * target not reached: counted as the number of rounds run (the paper's cap)\n");
  if (!complete) std::printf("# run cut short by a stop request: %zu trial(s) recorded\n", trials.size());
  std::fflush(stdout);
  if (trace_) trace_->finish(complete);
}

}  // namespace avb::app
