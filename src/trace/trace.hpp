// The HDF5 trace of one run, schema v1 (docs/trace-format.md).
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

namespace avb {

inline constexpr int kTraceSchemaVersion = 1;

// One row per round; row 0 is the initial state. Counters are cumulative over the
// trial (bytes_sent, time) so that a column can be plotted against directly.
struct RoundRow {
  std::int32_t round = 0;
  double variance = 0;       // (1/(N*D)) sum_i ||x_i - mean_t||^2
  double error = 0;          // (1/(N*D)) sum_i ||x_i - mean_0||^2
  double mean_drift = 0;     // (1/D) ||mean_t - mean_0||^2   (error = variance + mean_drift)
  std::int32_t alive = 0;    // peers alive in this round
  std::int32_t groups = 0;   // groups that attempted to average in this round
  std::int32_t failed_groups = 0;  // of those, groups whose averaging was cancelled
  std::uint64_t bytes_sent = 0;    // all peers, cumulative since round 0
  double time = 0;                 // seconds in protocol steps, cumulative (max over peers)
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

// Root attributes that describe the run (the writer adds schema_version,
// created_utc and complete itself).
struct RunInfo {
  std::string avbench_version;
  std::string git_sha;
  std::string command_line;
  std::string engine;       // openmpi | mpich | smpi
  std::string mpi_library;  // MPI_Get_library_version, first line
  std::int32_t n_peers = 0;
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

  // /trials/<index>/ with one dataset per column and the target attributes.
  void write_trial(const TrialRecord& trial);

  // Writes /summary from the trials written so far, sets `complete`, closes the
  // file and renames it to the final path.
  void finish(bool complete);

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporary_path() const { return tmp_path_; }

 private:
  struct Impl;
  std::filesystem::path path_;
  std::filesystem::path tmp_path_;
  std::unique_ptr<Impl> impl_;
};

// Checks, without creating anything, that `path` could be written: its folder
// exists and is writable, and it does not exist unless overwrite. Throws TraceError.
void check_trace_destination(const std::filesystem::path& path, bool overwrite);

}  // namespace avb
