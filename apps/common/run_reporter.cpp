#include "common/run_reporter.hpp"

#include <unistd.h>  // isatty

#include <algorithm>
#include <cmath>
#include <cstring>

namespace avb::app {

std::int64_t late_decode_failures(const std::vector<std::int32_t>& per_row) {
  const auto keep = static_cast<std::size_t>(kPersistentDecodeRows);
  const std::size_t first = per_row.size() > keep ? per_row.size() - keep : 0;
  std::int64_t sum = 0;
  for (std::size_t r = first; r < per_row.size(); ++r) sum += per_row[r];
  return sum;
}

void RunReporter::warn_persistent_decode_failures(const std::string& program, const char* rows) const {
  if (trials_late_ == 0) return;
  report_warning(program, "decode failures persisted: " + std::to_string(late_decode_failures_) +
                              " quantized message(s) did not decode in the last " +
                              std::to_string(kPersistentDecodeRows) + " " + rows + " of " +
                              std::to_string(trials_late_) + " of " + std::to_string(recorded_) +
                              " trial(s) (lattice: each was sent again at 8 bytes a value; values more than "
                              "q*eps/2 apart need a larger --lattice-eps or --lattice-q; see docs/protocols.md)");
}

RunReporter::RunReporter(const std::vector<double>& targets, int peers, std::unique_ptr<TraceWriter> trace,
                         const OutputFlags& output)
    : trace_(std::move(trace)),
      targets_(targets),
      peers_(peers),
      output_(output),
      summary_(summary_is_json(output.summary)),
      terminal_(::isatty(STDERR_FILENO) == 1),
      to_target_(targets.size()) {}

void RunReporter::print_run(const std::string& program, const RunInfo& info, const KeyValues& options,
                            std::vector<std::string> columns) {
  std::fprintf(table_out(), "# %s %s (git %s)\n", program.c_str(), info.avbench_version.c_str(), info.git_sha.c_str());
  std::fprintf(table_out(), "# engine: %s (%s), peers: %d\n", info.engine.c_str(), info.mpi_library.c_str(), info.n_peers);
  std::string line;
  for (const auto& [k, v] : options) line += " " + k + "=" + v;
  std::fprintf(table_out(), "# options:%s\n", line.c_str());
  // The identity of a --summary row: the same options as the trace's /config.
  std::vector<std::pair<std::string, SummaryCell>> identity{{"program", summary_text(program)},
                                                            {"engine", summary_text(info.engine)},
                                                            {"peers", summary_integer(info.n_peers)}};
  // An option named like a per-trial column (seed, rounds) gets a config_ prefix,
  // as in python/avbench's tables: the run's --seed is config_seed.
  for (const auto& [k, v] : options) {
    if (k == "engine" || k == "peers") continue;
    const bool clash = std::find(columns.begin(), columns.end(), k) != columns.end() || k == "run_complete";
    identity.emplace_back(clash ? "config_" + k : k, output_.text_keys.count(k) ? summary_text(v) : summary_option(v));
  }
  summary_.set_identity(std::move(identity));
  summary_.set_columns(std::move(columns));
}

std::vector<std::string> RunReporter::target_columns(const char* to_prefix) const {
  std::vector<std::string> names{"trial", "seed"};
  for (double t : targets_) names.push_back(to_prefix + target_attribute_name(t).substr(10));  // after "rounds_to_"
  for (double t : targets_) names.push_back("reached_" + target_attribute_name(t).substr(10));
  return names;
}

void RunReporter::print_heads(const std::string& own) const {
  if (trace_) std::fprintf(table_out(), "# trace: %s\n", trace_->path().c_str());
  std::fprintf(table_out(), "#\n# %5s %20s", "trial", "seed");
  for (double t : targets_) std::fprintf(table_out(), " %11s", ("to " + target_attribute_name(t).substr(10)).c_str());
  std::fprintf(table_out(), "%s\n", own.c_str());
  std::fflush(table_out());
}

std::FILE* RunReporter::rows_out() const {
  if (!output_.quiet) return table_out();
  static std::FILE* const nowhere = std::fopen("/dev/null", "w");
  return nowhere != nullptr ? nowhere : table_out();
}

bool RunReporter::progress_due() {
  if (output_.quiet) return false;
  const std::time_t now = std::time(nullptr);
  // A host draws its own bar: as often as a terminal's line.
  const int every = terminal_ || host() != nullptr ? std::min(1, output_.progress_every) : output_.progress_every;
  if (now - last_progress_ < every) return false;
  last_progress_ = now;
  return true;
}

void RunReporter::print_progress(double done, const std::string& detail) {
  done = shown_ = std::max(done, shown_);  // two sources (rows reported, rows made): never backwards
  ++progress_lines_;
  if (host() != nullptr) return host()->progress(done, detail);
  const double elapsed = std::difftime(std::time(nullptr), started_);
  char eta[32] = "?";
  if (done > 0) std::snprintf(eta, sizeof eta, "%.0fs", elapsed * (1 - done) / done);
  // On a terminal: back to the line's start, and clear what a longer line left.
  std::fprintf(stderr, "%s[%.0fs] %5.1f%% %s, ETA %s%s%s", terminal_ ? "\r" : "", elapsed, 100 * done,
               detail.c_str(), eta_is_bound_ && done < 1 ? "<= " : "", eta, terminal_ ? "\033[K" : "\n");
  std::fflush(stderr);
}

void RunReporter::clear_progress_line() {
  if (!terminal_ || progress_lines_ == 0 || host() != nullptr || ::isatty(STDOUT_FILENO) != 1) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

void RunReporter::print_work(long long done, double total, const char* unit) {
  if (done == work_shown_ || !progress_due()) return;  // nothing new since the last line
  work_shown_ = done;
  char detail[96];
  std::snprintf(detail, sizeof detail, "%lld of %.0f %s run", done, total, unit);
  print_progress(total > 0 ? std::min(1.0, static_cast<double>(done) / total) : 0.0, detail);
}

void RunReporter::print_means(const char* target_format, const std::vector<SummaryColumn>& columns,
                              const char* capped_note) const {
  // A cell of the column's width: the value in the column's format, or "–".
  auto cell = [](const char* format, bool known, double value) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    if (known) return std::string(text);
    const std::size_t width = std::strlen(text);
    return std::string(width > 1 ? width - 1 : 0, ' ') + "\u2013";  // "–" is one column wide
  };
  auto line = [&](const char* label, bool se) {
    std::string text;
    for (const auto& s : to_target_) text += cell(target_format, se ? s.n > 1 : s.n > 0, se ? s.se() : s.mean);
    for (const auto& c : columns)
      text += cell(c.format, se ? c.stats.n > 1 : c.stats.n > 0, se ? c.stats.se() : c.stats.mean);
    std::fprintf(table_out(), "# %5s %20s%s\n", label, "", text.c_str());
  };
  line("mean", false);
  line("± se", true);
  if (capped_) std::fprintf(table_out(), "# * target not reached: %s\n", capped_note);
}

void RunReporter::print_coverage(bool stop_at_target, const char* unit) {
  // What the bytes and time columns add up: the whole trial, or up to where it stopped.
  if (stop_at_target)
    std::fprintf(table_out(), "# bytes/peer, time: up to the %s each trial stopped at (every target reached, or the last %s)\n",
                unit, unit);
  else
    std::fprintf(table_out(), "# bytes/peer, time: each trial's %ss, all of them (--stop-at-target ends a trial at its last "
                "target)\n", unit);
}

void RunReporter::close(bool complete) {
  const std::size_t recorded = recorded_, cut_short = cut_short_;
  if (!trace_error_.empty())
    std::fprintf(table_out(), "# run stopped: the trace could not be written (see stderr)\n");
  else if (!complete)
    std::fprintf(table_out(), "# run cut short by a stop request: %zu trial(s) recorded, %zu cut short and left out of the means\n",
                recorded, cut_short);
  std::fprintf(table_out(), "# wall time: %.4g s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count());
  std::fflush(table_out());
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.finish(complete); });
  // A run that showed progress ends it at 100% (and, on a terminal, ends its line).
  if (progress_lines_ > 0 && complete) print_progress(1.0, "done");
  if (progress_lines_ > 0 && terminal_ && host() == nullptr) std::fputc('\n', stderr);
  write_summary(complete && trace_error_.empty());
}

void RunReporter::write_summary(bool complete) {
  if (output_.summary.empty()) return;
  summary_error_ = summary_.write(output_.summary, output_.overwrite, "run_complete", summary_integer(complete ? 1 : 0));
}

}  // namespace avb::app
