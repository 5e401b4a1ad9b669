#include "common/run_reporter.hpp"

#include <unistd.h>  // isatty

#include <algorithm>
#include <cmath>

namespace avb::app {

MeanSe mean_se(const std::vector<double>& values) {
  // NaN is a value not measured (a quadratic's accuracy), not one to average.
  std::vector<double> v;
  for (double x : values)
    if (!std::isnan(x)) v.push_back(x);
  MeanSe r;
  if (v.empty()) return r;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  r.mean = mean;
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  r.se = std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  return r;
}

namespace {

// One cell of the mean and "± se" lines: `format` (one double), or "–" when there
// is no value, padded to the width that `format` gives a value (printf pads by
// bytes, and the dash is three of them in UTF-8).
void print_cell(const char* format, const std::optional<double>& value) {
  if (value) {
    std::printf(format, *value);
    return;
  }
  const int width = std::snprintf(nullptr, 0, format, 0.0);
  std::printf("%*s–", width > 1 ? width - 1 : 0, "");
}

}  // namespace

std::int64_t late_decode_failures(const std::vector<std::int32_t>& per_row) {
  const auto keep = static_cast<std::size_t>(kPersistentDecodeRows);
  const std::size_t first = per_row.size() > keep ? per_row.size() - keep : 0;
  std::int64_t sum = 0;
  for (std::size_t r = first; r < per_row.size(); ++r) sum += per_row[r];
  return sum;
}

void warn_persistent_decode_failures(const std::string& program, const std::vector<std::int64_t>& late_per_trial,
                                     const char* rows) {
  std::int64_t failures = 0, trials = 0;
  for (std::int64_t f : late_per_trial) {
    failures += f;
    trials += f > 0 ? 1 : 0;
  }
  if (trials == 0) return;
  report_warning(program, "decode failures persisted: " + std::to_string(failures) +
                              " quantized message(s) did not decode in the last " +
                              std::to_string(kPersistentDecodeRows) + " " + rows + " of " + std::to_string(trials) +
                              " of " + std::to_string(late_per_trial.size()) +
                              " trial(s) (lattice: each was sent again at 8 bytes a value; values more than "
                              "q*eps/2 apart need a larger --lattice-eps or --lattice-q; see docs/protocols.md)");
}

RunReporter::RunReporter(const std::vector<double>& targets, int peers, std::unique_ptr<TraceWriter> trace,
                         const OutputFlags& output)
    : trace_(std::move(trace)),
      targets_(targets),
      peers_(peers),
      output_(output),
      terminal_(::isatty(STDERR_FILENO) == 1),
      to_target_(targets.size()) {}

void RunReporter::print_run(const std::string& program, const RunInfo& info, const KeyValues& options,
                            std::vector<std::string> columns) {
  std::printf("# %s %s (git %s)\n", program.c_str(), info.avbench_version.c_str(), info.git_sha.c_str());
  std::printf("# engine: %s (%s), peers: %d\n", info.engine.c_str(), info.mpi_library.c_str(), info.n_peers);
  std::string line;
  for (const auto& [k, v] : options) line += " " + k + "=" + v;
  std::printf("# options:%s\n", line.c_str());
  // The identity of a --summary row: the same options as the trace's /config.
  std::vector<std::pair<std::string, SummaryCell>> identity{{"program", summary_text(program)},
                                                            {"engine", summary_text(info.engine)},
                                                            {"peers", summary_integer(info.n_peers)}};
  // An option named like a per-trial column (seed, rounds) gets a config_ prefix,
  // as in python/avbench's tables: the run's --seed is config_seed.
  for (const auto& [k, v] : options) {
    if (k == "engine" || k == "peers") continue;
    const bool clash = std::find(columns.begin(), columns.end(), k) != columns.end() || k == "run_complete";
    identity.emplace_back(clash ? "config_" + k : k, summary_option(v));
  }
  summary_.set_identity(std::move(identity));
  summary_.set_columns(std::move(columns));
}

std::vector<std::string> RunReporter::target_columns(const char* to_prefix) const {
  std::vector<std::string> names{"trial", "seed"};
  for (double t : targets_) names.push_back(to_prefix + target_attribute_name(t).substr(10));  // after "rounds_to_"
  return names;
}

void RunReporter::print_heads(const std::string& own) const {
  if (trace_) std::printf("# trace: %s\n", trace_->path().c_str());
  std::printf("#\n# %5s %20s", "trial", "seed");
  for (double t : targets_) std::printf(" %11s", ("to " + target_attribute_name(t).substr(10)).c_str());
  std::printf("%s\n", own.c_str());
  std::fflush(stdout);
}

bool RunReporter::progress_due() {
  if (output_.quiet) return false;
  const std::time_t now = std::time(nullptr);
  const int every = terminal_ ? std::min(1, output_.progress_every) : output_.progress_every;
  if (now - last_progress_ < every) return false;
  last_progress_ = now;
  return true;
}

void RunReporter::print_progress(double done, const std::string& detail) {
  const double elapsed = std::difftime(std::time(nullptr), started_);
  char eta[32] = "?";
  if (done > 0) std::snprintf(eta, sizeof eta, "%.0fs", elapsed * (1 - done) / done);
  // On a terminal: back to the line's start, and clear what a longer line left.
  std::fprintf(stderr, "%s[%.0fs] %5.1f%% %s, ETA %s%s", terminal_ ? "\r" : "", elapsed, 100 * done,
               detail.c_str(), eta, terminal_ ? "\033[K" : "\n");
  std::fflush(stderr);
  ++progress_lines_;
}

void RunReporter::print_means(const char* target_format, const std::vector<SummaryColumn>& columns,
                              const char* capped_note) const {
  auto line = [&](const char* label, auto pick) {
    std::printf("# %5s %20s", label, "");
    for (const auto& s : to_target_) print_cell(target_format, pick(mean_se(s)));
    for (const auto& c : columns) print_cell(c.format, pick(mean_se(c.values)));
    std::printf("\n");
  };
  line("mean", [](const MeanSe& m) { return m.mean; });
  line("± se", [](const MeanSe& m) { return m.se; });
  if (capped_) std::printf("# * target not reached: %s\n", capped_note);
}

void RunReporter::close(std::size_t recorded, std::size_t cut_short, bool complete) {
  if (!trace_error_.empty())
    std::printf("# run stopped: the trace could not be written (see stderr)\n");
  else if (!complete)
    std::printf("# run cut short by a stop request: %zu trial(s) recorded, %zu cut short and left out of the means\n",
                recorded, cut_short);
  std::printf("# wall time: %.4g s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count());
  std::fflush(stdout);
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.finish(complete); });
  // A run that showed progress ends it at 100% (and, on a terminal, ends its line).
  if (progress_lines_ > 0 && complete) print_progress(1.0, "done");
  if (progress_lines_ > 0 && terminal_) std::fputc('\n', stderr);
  write_summary(complete && trace_error_.empty());
}

void RunReporter::write_summary(bool complete) {
  if (output_.summary.empty()) return;
  summary_.append_constant("run_complete", summary_integer(complete ? 1 : 0));
  const std::string text = summary_is_json(output_.summary) ? summary_.json() : summary_.csv();
  summary_error_ = write_summary_file(output_.summary, output_.overwrite, text);
}

}  // namespace avb::app
