#include "trace/trace.hpp"

#include <unistd.h>  // getpid

#include <charconv>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <ctime>
#include <optional>
#include <system_error>
#include <type_traits>

#include "core/error.hpp"
#include "trace/columns.hpp"
#include "trace/destination.hpp"
#include "trace/h5.hpp"

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

// A trial's group: its seed and flags (0/1), then per target the rounds or steps
// to reach it (`to_prefix` + suffix) and whether it was reached, then the targets.
using Flag = std::pair<const char*, bool>;  // a 0/1 attribute of a trial's group

template <class Trial>
h5::Node trial_group(h5::Node& trials, const Trial& trial, std::initializer_list<Flag> flags,
                     const std::string& to_prefix, const std::vector<std::string>& suffixes) {
  h5::Node group = trials.create_group(std::to_string(trial.index));
  group.set_uint64("seed", trial.seed);
  for (const auto& [name, value] : flags) group.set_int32(name, value ? 1 : 0);
  std::vector<double> targets;
  for (std::size_t k = 0; k < trial.targets.size(); ++k) {
    group.set_int32(to_prefix + suffixes[k], trial.targets[k].rounds);
    targets.push_back(trial.targets[k].target);
  }
  for (std::size_t k = 0; k < trial.targets.size(); ++k)
    group.set_int32("reached_" + suffixes[k], trial.targets[k].reached ? 1 : 0);
  // Its own dimension: a coordinate variable, as a netCDF reader sees it.
  group.write_dataset("targets", targets).make_scale("targets");
  return group;
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
  std::optional<h5::Node> trials;  // the open /trials group; reset before closing
  bool overwrite = false;
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();  // run_seconds counts from here
  std::chrono::steady_clock::time_point flushed = opened;
  bool config_written = false;
  bool finished = false;
  // Set when finish() closed the file but could not move it into place: the
  // temporary file then holds the only copy of the results and must survive.
  bool keep_temporary = false;
  std::optional<std::vector<double>> targets;  // fixed by the first trial written
  std::vector<SummaryRow> summary;
  std::vector<TrainingSummaryRow> training_summary;
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

  // Writes /trials/<k> (after the caller's checks) and returns the summary fields
  // both run kinds share.
  template <class Summary, class Trial, class Columns>
  Summary write_group(const Trial& trial, const std::string& where, std::initializer_list<Flag> flags,
                      const std::string& to_prefix, const Columns& columns) {
    const std::vector<std::string> suffixes = target_suffixes(trial.targets, where);
    h5::Node group = trial_group(*trials, trial, flags, to_prefix, suffixes);
    write_columns(group, columns, trial.rows);
    // A flush bounds what a hard kill (no chance to call finish) can lose from the
    // temporary file. At most one a second: on the sequential engine a trial can
    // take less time than the flush itself.
    const auto now = std::chrono::steady_clock::now();
    if (now - flushed >= std::chrono::seconds(1)) {
      file.flush();
      flushed = now;
    }
    return summary_of<Summary>(trial);
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
    impl->trials = file.create_group("trials");
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
  auto s = impl_->write_group<SummaryRow>(trial, where, {{"complete", trial.complete}}, "rounds_to_", kRoundColumns);
  const RoundRow& last = trial.rows.back();
  s.final_variance = last.variance;
  s.final_error = last.error;
  impl_->summary.push_back(std::move(s));
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
  auto s = impl_->write_group<TrainingSummaryRow>(
      trial, where, {{"complete", trial.complete}, {"diverged", trial.diverged}}, "steps_to_", kTrainingColumns);
  const TrainingRow& last = trial.rows.back();
  s.final_gap = last.gap;
  s.final_relative_gap = last.relative_gap;
  s.final_consensus = last.consensus;
  s.final_accuracy = last.accuracy;
  s.steps = last.step;
  s.diverged = trial.diverged ? 1 : 0;
  impl_->training_summary.push_back(std::move(s));
}

void TraceWriter::finish(bool complete) {
  impl_->require_open(tmp_path_, "finish");
  Impl& im = *impl_;
  // The schema promises /config; a run stopped before writing it still gets one.
  if (!im.config_written) write_config({}, "");

  const std::vector<double> targets = im.targets.value_or(std::vector<double>{});
  if (im.kind == "sgd") {
    // A run stopped before its first trial still records what it was training.
    if (!im.optimum_written) im.file.create_group("optimum");
    write_summary(im.file, im.training_summary, targets, "steps_to_", kTrainingSummaryColumns);
  } else {
    write_summary(im.file, im.summary, targets, "rounds_to_", kSummaryColumns);
  }

  im.file.set_double("run_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - im.opened).count());
  im.file.update_int32("complete", complete ? 1 : 0);
  im.file.flush();
  // Only a file closed without error may take the final name.
  im.trials.reset();
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
