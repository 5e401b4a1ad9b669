// What both benchmark apps share: stop signals, error reporting, the OSU-style
// table, progress lines and the trace observer. Apps may print and exit; the
// library may not, so all of that lives here.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run/averaging.hpp"
#include "trace/trace.hpp"

namespace avb::app {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// SIGTERM and SIGINT set a flag that the run polls once per round; all ranks then
// stop after the same round (the flag is combined by a reduction). The flag is the
// one piece of mutable global state in avbench, on purpose: a signal is delivered
// to the process, so under SMPI every simulated rank should see it.
void install_stop_handlers();
int stop_signal();  // 0 when no stop was requested, else the signal number

// Prints "<program>: error: <message>" on stderr, once (rank 0 only).
void report_error(const std::string& program, const std::string& message);

std::string join_command_line(int argc, char** argv);
std::string format_number(double v);

// Rank 0's observer: prints the table, writes the trace, shows progress.
class Reporter final : public AveragingObserver {
 public:
  Reporter(const AveragingOptions& options, std::unique_ptr<TraceWriter> trace, bool quiet);

  void print_header(const std::string& program, const RunInfo& info, const KeyValues& options) const;
  void on_round(const TrialRecord& trial, const RoundRow& row) override;
  void on_trial(const TrialRecord& trial) override;
  bool stop_requested() override { return stop_signal() != 0; }
  // Mean +- standard error over the trials, then the trace is finished.
  void finish(const std::vector<TrialRecord>& trials, bool complete);

 private:
  AveragingOptions options_;
  std::unique_ptr<TraceWriter> trace_;
  bool quiet_;
  int peers_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_progress_ = started_;

 public:
  void set_peers(int n) { peers_ = n; }
};

}  // namespace avb::app
