// The HDF5 trace of one run, schema kTraceSchemaVersion (docs/trace-format.md): an averaging run
// (averaging_bench) or a training run (sgd_bench), told apart by the root
// attribute run_kind.
//
// Only rank 0 ever constructs a TraceWriter: the HDF5 library keeps global state,
// which SMPI ranks would share. The file is written under a temporary name beside
// the final one and renamed by finish(), so a reader never sees a half-written
// trace under the final name and an earlier trace there is replaced atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace avb {

// v2 added run_kind and the training layout; an averaging trace is otherwise v1's.
// v3 added the decode_failures column to both layouts; v4 the detection_time column;
// v5 the training layout's `diverged` (a trial attribute and a /summary column);
// v6 the root attributes time_model and run_seconds, and the engine "sequential";
// v7 dimension scales (round or step, targets, trial, coordinate) and /optimum/coordinate;
// v8 the averaging layout's `late` column;
// v9 every trial's rows in one set of 2-D datasets over (trial, round or step),
// /summary written as the trials are, with `targets`; no group per trial.
inline constexpr int kTraceSchemaVersion = 9;

// One row per round; row 0 is the initial state. Counters are cumulative over the
// trial (bytes_sent, time) so that a column can be plotted against directly.
struct RoundRow {
  std::int32_t round = 0;
  double variance = 0;       // (1/(N*D)) sum_i ||x_i - mean_t||^2
  double error = 0;          // (1/(N*D)) sum_i ||x_i - mean_0||^2
  double mean_drift = 0;     // (1/D) ||mean_t - mean_0||^2   (error = variance + mean_drift)
  std::int32_t late = 0;     // peers a waiting policy (--wait) left behind in this round
  std::int32_t alive = 0;    // peers alive in this round
  std::int32_t groups = 0;   // groups that attempted to average in this round
  std::int32_t failed_groups = 0;  // of those, groups whose averaging was cancelled
  std::int32_t decode_failures = 0;  // quantized messages received in this round that did not decode
  std::uint64_t bytes_sent = 0;    // all peers, cumulative since round 0
  double time = 0;                 // seconds in protocol steps, cumulative (max over peers)
  double detection_time = 0;       // failure detection charged to one peer, cumulative (max over peers)
};

// Rounds needed to bring the variance below one target.
struct TargetResult {
  double target = 0;
  std::int32_t rounds = 0;  // first round with variance < target; the cap when never
  bool reached = false;
};

struct TrialRecord {
  std::int32_t index = 0;
  std::uint64_t seed = 0;
  std::vector<RoundRow> rows;
  std::vector<TargetResult> targets;
  bool complete = true;  // false for a trial cut short by a stop request
};

// One row per evaluation of a training run; row 0 is the initial state (step 0).
// x_bar = (1/N) sum_i x_i over all N peers, down ones included.
struct TrainingRow {
  std::int32_t step = 0;            // SGD steps done
  std::int32_t round = 0;           // averaging rounds done
  double loss = 0;                  // f(x_bar) on the pooled problem
  double gap = 0;                   // f(x_bar) - f*
  double relative_gap = 0;          // gap / (f(x_0) - f*)
  double distance = 0;              // ||x_bar - x*||^2
  double consensus = 0;             // (1/N) sum_i ||x_i - x_bar||^2
  double accuracy = 0;              // logistic: share of test samples classified right; NaN otherwise
  std::int32_t alive = 0;           // peers up in the last round
  std::int32_t groups = 0;          // groups formed since the previous row
  std::int32_t failed_groups = 0;   // of those, cancelled
  std::int32_t decode_failures = 0; // quantized messages that did not decode, since the previous row
  std::uint64_t bytes_sent = 0;     // all peers, cumulative
  double time = 0;                  // seconds in SGD steps and rounds, cumulative (see trainer.hpp)
  double detection_time = 0;        // failure detection charged to one peer, cumulative (max over peers)
};

struct TrainingTrial {
  std::int32_t index = 0;
  std::uint64_t seed = 0;
  std::vector<TrainingRow> rows;
  std::vector<TargetResult> targets;  // `rounds` holds steps: first row with relative_gap <= target
  bool complete = true;
  // SGD that diverged (e.g. too large a --lr): the model became NaN or infinite, or
  // its gap passed its limit (sgd/metrics.hpp, TrainingMetrics::diverged).
  // The trial was stopped at that evaluation: its last row is the first that shows it.
  bool diverged = false;
};

// The optimum of the pooled problem, written once to /optimum.
struct OptimumRecord {
  std::vector<double> x;      // x*
  double loss = 0;            // f*
  double initial_loss = 0;    // f(x_0)
  double gradient_norm = 0;   // ||grad f(x*)||
  std::int32_t iterations = 0;
  bool converged = false;
  std::string method;         // "ldlt" or "newton"
  std::string test_set;       // logistic: what the accuracy column is measured on
};

// Root attributes that describe the run (the writer adds schema_version,
// created_utc and complete itself).
struct RunInfo {
  std::string avbench_version;
  std::string git_sha;
  std::string command_line;
  std::string engine;       // openmpi | mpich | smpi | sequential
  // How the `time` column came about: "wall clock" (a real MPI), "simulated"
  // (SMPI), "alpha-beta estimate" (the sequential engine).
  std::string time_model = "wall clock";
  std::string mpi_library;  // MPI_Get_library_version, first line
  std::int32_t n_peers = 0;
  std::string run_kind = "averaging";  // averaging | sgd
};

// Attribute name for a target, e.g. 1e-09 -> "rounds_to_1e-9", 2.5e-3 -> "rounds_to_2.5e-3".
std::string target_attribute_name(double target);

class TraceWriter {
 public:
  // Refuses (TraceError) when `path` exists and !overwrite, or when its folder is
  // missing or not writable. Creates only the temporary file.
  TraceWriter(std::filesystem::path path, bool overwrite, const RunInfo& info);
  ~TraceWriter();  // without finish(): closes and removes the temporary file
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Every resolved option as an attribute of /config, plus the whole text.
  void write_config(const std::vector<std::pair<std::string, std::string>>& options,
                    const std::string& config_text);

  // Appends a trial to /trials (its rows) and /summary (its totals and targets).
  // Trials are buffered and written in batches, at least once a second.
  void write_trial(const TrialRecord& trial);

  // A training run: /optimum once, then its trials as above.
  // A file holds trials of one kind only.
  void write_optimum(const OptimumRecord& optimum);
  void write_trial(const TrainingTrial& trial);

  // Writes the trials still buffered, sets `complete`, closes the file and
  // renames it to the final path.
  void finish(bool complete);

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporary_path() const { return tmp_path_; }

 private:
  struct Impl;
  std::filesystem::path path_;
  std::filesystem::path tmp_path_;
  std::unique_ptr<Impl> impl_;
};

// Why a trace cannot be written at a path. The message names the path, not a
// flag: the apps prefix "--out: " and, for `exists`, how to allow replacing it.
class DestinationError : public TraceError {
 public:
  enum class Reason { not_a_file_name, no_folder, folder_is_file, is_folder, not_regular, not_writable, exists };
  DestinationError(Reason reason, const std::string& message) : TraceError(message), reason_(reason) {}
  Reason reason() const { return reason_; }

 private:
  Reason reason_;
};

// The one check of a trace's destination, without creating anything: its folder
// exists and is writable; the path is not a folder, nor anything else that is not
// a regular file (FIFO, device, socket, or a link to one), whatever `overwrite`;
// and it does not exist unless overwrite. Throws DestinationError.
void check_trace_destination(const std::filesystem::path& path, bool overwrite);

}  // namespace avb
