#include "trace/trace.hpp"

#include <unistd.h>  // getpid

#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <set>
#include <system_error>
#include <type_traits>

#include "core/error.hpp"
#include "trace/columns.hpp"
#include "trace/destination.hpp"
#include "trace/h5.hpp"
#include "trace/trial_tables.hpp"

namespace avb {
namespace {

// ISO 8601 UTC to the second, e.g. "2026-11-30T12:00:00Z".
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm parts{};
  gmtime_r(&now, &parts);  // reentrant: std::gmtime returns a shared static buffer
  char text[32];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return std::string(text, n);
}

// The /summary fields both run kinds share, from the trial and its last row.
template <class Summary, class Trial>
Summary summary_of(const Trial& trial) {
  Summary s;
  s.trial = trial.index;
  s.seed = trial.seed;
  for (const auto& t : trial.targets) {
    s.to_target.push_back(t.rounds);
    s.reached.push_back(t.reached ? 1 : 0);
  }
  const auto& last = trial.rows.back();
  s.bytes_sent = last.bytes_sent;
  s.time = last.time;
  s.rounds = last.round;
  s.complete = trial.complete ? 1 : 0;
  return s;
}

}  // namespace

using namespace trace_columns;

std::string target_attribute_name(double target) {
  if (!std::isfinite(target) || target <= 0) {
    throw TraceError("target must be a positive finite number, got " + std::to_string(target));
  }
  // Shortest digits that read back as the same double, in scientific form:
  // 2.5e-3 -> "2.5e-03". The name therefore identifies the target exactly.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, target, std::chars_format::scientific);
  std::string_view text(buf, static_cast<std::size_t>(res.ptr - buf));
  const std::size_t e = text.find('e');
  std::string_view mantissa = text.substr(0, e);
  std::string_view exponent = text.substr(e + 1);
  // Exponent without '+' or leading zeros: "e-03" -> "e-3", "e+00" -> "e0".
  std::string exp;
  if (exponent.front() == '-') exp = "-";
  exponent.remove_prefix(exponent.front() == '-' || exponent.front() == '+' ? 1 : 0);
  while (exponent.size() > 1 && exponent.front() == '0') exponent.remove_prefix(1);
  exp += exponent;
  return "rounds_to_" + std::string(mantissa) + "e" + exp;
}

struct TraceWriter::Impl {
  Impl(h5::File f, bool ow) : file(std::move(f)), overwrite(ow) {}

  h5::File file;
  bool overwrite = false;
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();  // run_seconds counts from here
  std::chrono::steady_clock::time_point flushed = opened;
  bool config_written = false;
  bool finished = false;
  // Set when finish() closed the file but could not move it into place: the
  // temporary file then holds the only copy of the results and must survive.
  bool keep_temporary = false;
  std::optional<std::vector<double>> targets;  // fixed by the first trial written
  // The run kind's tables (the other stays empty); reset before closing.
  std::optional<TrialTables<TrialRecord, SummaryRow>> rounds;
  std::optional<TrialTables<TrainingTrial, TrainingSummaryRow>> evaluations;
  bool optimum_written = false;
  // "averaging" or "sgd", from RunInfo; trials of the other kind are refused.
  std::string kind;

  void require_kind(const std::string& wanted, const std::string& where) const {
    if (kind != wanted)
      throw TraceError(where + ": this trace records a run of kind " + kind + ", not " + wanted);
  }

  // Checks a trial's targets against the first trial's and returns their names.
  std::vector<std::string> target_suffixes(const std::vector<TargetResult>& results, const std::string& where) {
    std::vector<double> values;
    std::vector<std::string> suffixes;
    for (const auto& t : results) {
      values.push_back(t.target);
      suffixes.push_back(target_suffix(t.target));
      for (std::size_t k = 0; k + 1 < suffixes.size(); ++k)
        if (suffixes[k] == suffixes.back()) throw TraceError(where + ": target " + suffixes.back() + " given twice");
    }
    // Every trial must report the same targets in the same order, since /summary
    // has one column per target.
    if (!targets) {
      targets = values;
    } else if (*targets != values) {
      throw TraceError(where + ": targets differ from those of the first trial written");
    }
    return suffixes;
  }

  // Buffers a trial (after the caller's checks) and appends the buffer to the
  // file when it is full or a second has passed since the last batch: the flush
  // that follows bounds what a hard kill (no chance to call finish) can lose
  // from the temporary file.
  template <class Tables, class Trial, class Summary>
  void add(Tables& tables, const Trial& trial, Summary summary, const std::string& where) {
    (void)target_suffixes(trial.targets, where);
    if (trial.index < contiguous || ahead.contains(trial.index))
      throw TraceError(where + ": trial " + std::to_string(trial.index) + " was already written");
    tables.add(trial, std::move(summary), *targets, where);
    claim_index(trial.index);
    const auto now = std::chrono::steady_clock::now();
    if (tables.full() || now - flushed >= std::chrono::seconds(1)) {
      tables.write();
      file.flush();
      flushed = now;
    }
  }

  // Trial indices written so far: all below `contiguous`, and those in `ahead`
  // (empty while trials come in order, as they do from every runner).
  std::int32_t contiguous = 0;
  std::set<std::int32_t> ahead;

  void claim_index(std::int32_t index) {
    if (index != contiguous) {
      ahead.insert(index);
      return;
    }
    ++contiguous;
    while (!ahead.empty() && *ahead.begin() == contiguous) {
      ahead.erase(ahead.begin());
      ++contiguous;
    }
  }

  void require_open(const std::filesystem::path& tmp, std::string_view operation) const {
    if (finished || !file.is_open()) {
      throw TraceError(std::string(operation) + ": trace " + tmp.string() +
                       " is already finished or closed");
    }
  }
};

TraceWriter::TraceWriter(std::filesystem::path path, bool overwrite, const RunInfo& info)
    : path_(std::move(path)) {
  check_trace_destination(path_, overwrite);
  // Hidden name beside the final one: same file system, so the final rename is
  // atomic; the pid keeps concurrent runs writing the same path apart.
  tmp_path_ = path_.parent_path() /
              ("." + path_.filename().string() + ".tmp." + std::to_string(::getpid()));
  auto impl = std::make_unique<Impl>(h5::File::create(tmp_path_), overwrite);
  try {
    h5::File& file = impl->file;
    file.set_int32("schema_version", kTraceSchemaVersion);
    file.set_string("avbench_version", info.avbench_version);
    file.set_string("git_sha", info.git_sha);
    file.set_string("created_utc", utc_now());
    file.set_string("command_line", info.command_line);
    file.set_string("engine", info.engine);
    file.set_string("time_model", info.time_model);
    file.set_string("mpi_library", info.mpi_library);
    file.set_int32("n_peers", info.n_peers);
    if (info.run_kind != "averaging" && info.run_kind != "sgd")
      throw TraceError("run_kind must be averaging or sgd, not '" + info.run_kind + "'");
    file.set_string("run_kind", info.run_kind);
    impl->kind = info.run_kind;
    file.set_int32("complete", 0);  // until finish() says otherwise
    file.create_group("trials");
    if (info.run_kind == "sgd") {
      impl->evaluations.emplace(impl->file, TableSpec<TrainingTrial, TrainingSummaryRow>{
                                                "step", "steps_to_", kTrainingColumns, kTrainingSummaryColumns,
                                                [](const TrainingRow& r) { return r.step; }});
    } else {
      impl->rounds.emplace(impl->file, TableSpec<TrialRecord, SummaryRow>{"round", "rounds_to_", kRoundColumns,
                                                                          kSummaryColumns,
                                                                          [](const RoundRow& r) { return r.round; }});
    }
  } catch (...) {
    // No destructor runs for a half-constructed object: clean up here.
    impl.reset();  // closes the file, ignoring errors
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);
    throw;
  }
  impl_ = std::move(impl);
}

TraceWriter::~TraceWriter() {
  if (!impl_) return;
  const bool remove = !impl_->finished && !impl_->keep_temporary;
  // Destroying Impl closes the group, then the file; handle destructors ignore
  // failures, and remove() has a non-throwing overload, so nothing escapes. A
  // temporary file that cannot be removed is hidden and harmless.
  impl_.reset();
  if (remove) {
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);
  }
}

void TraceWriter::write_config(const std::vector<std::pair<std::string, std::string>>& options,
                               const std::string& config_text) {
  impl_->require_open(tmp_path_, "write_config");
  if (impl_->config_written) {
    throw TraceError("write_config: /config was already written to " + tmp_path_.string());
  }
  for (const auto& [key, value] : options) {
    if (key == "text") {
      throw TraceError("write_config: option name 'text' clashes with the /config attribute "
                       "that holds the whole config text");
    }
  }
  h5::Node config = impl_->file.create_group("config");
  impl_->config_written = true;
  // A duplicate key fails in HDF5 (attribute exists) with a message naming it.
  for (const auto& [key, value] : options) config.set_string(key, value);
  config.set_string("text", config_text);
}

void TraceWriter::write_trial(const TrialRecord& trial) {
  impl_->require_open(tmp_path_, "write_trial");
  const std::string where = "write_trial " + std::to_string(trial.index) + " to " + tmp_path_.string();
  if (trial.index < 0) throw TraceError(where + ": negative trial index");
  if (trial.rows.empty()) throw TraceError(where + ": no rows (row 0, the initial state, is required)");

  impl_->require_kind("averaging", where);
  for (std::size_t r = 0; r < trial.rows.size(); ++r)
    if (trial.rows[r].round != static_cast<std::int32_t>(r))
      throw TraceError(where + ": row " + std::to_string(r) + " is round " + std::to_string(trial.rows[r].round));
  auto s = summary_of<SummaryRow>(trial);
  const RoundRow& last = trial.rows.back();
  s.final_variance = last.variance;
  s.final_error = last.error;
  impl_->add(*impl_->rounds, trial, std::move(s), where);
}

void TraceWriter::write_optimum(const OptimumRecord& optimum) {
  impl_->require_open(tmp_path_, "write_optimum");
  const std::string where = "write_optimum to " + tmp_path_.string();
  impl_->require_kind("sgd", where);
  if (impl_->optimum_written) throw TraceError(where + ": /optimum was already written");
  h5::Node group = impl_->file.create_group("optimum");
  impl_->optimum_written = true;
  // x's axis is the model's coordinates: the scale `coordinate` holds their index.
  std::vector<std::int32_t> index(optimum.x.size());
  for (std::size_t k = 0; k < index.size(); ++k) index[k] = static_cast<std::int32_t>(k);
  const h5::Dataset coordinate = group.write_dataset("coordinate", index);
  coordinate.make_scale("coordinate");
  group.write_dataset("x", optimum.x).attach(coordinate);
  group.set_double("loss", optimum.loss);
  group.set_double("initial_loss", optimum.initial_loss);
  group.set_double("gradient_norm", optimum.gradient_norm);
  group.set_int32("iterations", optimum.iterations);
  group.set_int32("converged", optimum.converged ? 1 : 0);
  group.set_string("method", optimum.method);
  group.set_string("test_set", optimum.test_set);
}

void TraceWriter::write_trial(const TrainingTrial& trial) {
  impl_->require_open(tmp_path_, "write_trial");
  const std::string where = "write_trial " + std::to_string(trial.index) + " to " + tmp_path_.string();
  impl_->require_kind("sgd", where);
  if (!impl_->optimum_written) throw TraceError(where + ": /optimum must be written first");
  if (trial.index < 0) throw TraceError(where + ": negative trial index");
  if (trial.rows.empty()) throw TraceError(where + ": no rows (row 0, the initial state, is required)");
  auto s = summary_of<TrainingSummaryRow>(trial);
  const TrainingRow& last = trial.rows.back();
  s.final_gap = last.gap;
  s.final_relative_gap = last.relative_gap;
  s.final_consensus = last.consensus;
  s.final_accuracy = last.accuracy;
  s.steps = last.step;
  s.diverged = trial.diverged ? 1 : 0;
  impl_->add(*impl_->evaluations, trial, std::move(s), where);
}

void TraceWriter::finish(bool complete) {
  impl_->require_open(tmp_path_, "finish");
  Impl& im = *impl_;
  // The schema promises /config; a run stopped before writing it still gets one.
  if (!im.config_written) write_config({}, "");

  if (im.kind == "sgd") {
    // A run stopped before its first trial still records what it was training.
    if (!im.optimum_written) im.file.create_group("optimum");
    im.evaluations->write();
  } else {
    im.rounds->write();
  }

  im.file.set_double("run_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - im.opened).count());
  im.file.update_int32("complete", complete ? 1 : 0);
  im.file.flush();
  // Only a file closed without error may take the final name.
  im.rounds.reset();
  im.evaluations.reset();
  im.file.close();

  // From here on the temporary file is a finished trace: on failure keep it and
  // say where it is rather than lose a run.
  try {
    move_into_place(tmp_path_, path_, im.overwrite);
  } catch (const TraceError&) {
    im.keep_temporary = true;
    throw;
  }
  im.finished = true;
}

}  // namespace avb
