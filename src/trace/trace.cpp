#include "trace/trace.hpp"

#include <fcntl.h>  // AT_FDCWD
#include <unistd.h>

#include <cerrno>
#include <cstdio>  // renameat2, RENAME_NOREPLACE (glibc with _GNU_SOURCE, g++'s default)

#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <system_error>
#include <type_traits>

#include "core/error.hpp"
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

// What /summary needs of a trial once its rows are written and gone.
struct SummaryRow {
  std::int32_t trial = 0;
  std::uint64_t seed = 0;
  std::vector<std::int32_t> rounds_to;  // one per target, in target order
  std::vector<std::int32_t> reached;
  double final_variance = 0;
  double final_error = 0;
  std::uint64_t bytes_sent = 0;
  double time = 0;
  std::int32_t rounds = 0;
  std::int32_t complete = 0;
};

// /summary of a training run, one per trial.
struct TrainingSummaryRow {
  std::int32_t trial = 0;
  std::uint64_t seed = 0;
  std::vector<std::int32_t> steps_to;
  std::vector<std::int32_t> reached;
  double final_gap = 0;
  double final_relative_gap = 0;
  double final_consensus = 0;
  double final_accuracy = 0;
  std::uint64_t bytes_sent = 0;
  double time = 0;
  std::int32_t steps = 0;
  std::int32_t rounds = 0;
  std::int32_t complete = 0;
  std::int32_t diverged = 0;
};

// Collects one field of every row into a column: the file stores columns, which
// is what a reader (numpy, pandas) wants, while the caller hands over rows.
template <class Row, class F>
auto column(const std::vector<Row>& rows, F field) {
  std::vector<std::decay_t<decltype(field(std::declval<const Row&>()))>> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(field(r));
  return out;
}

// The name after "rounds_to_" / "reached_", e.g. "1e-9".
std::string target_suffix(double target) {
  return target_attribute_name(target).substr(std::string_view("rounds_to_").size());
}

}  // namespace

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

namespace {
// What a path names when it exists and is not a regular file, in words; empty for
// a regular file (or a link to one) and for nothing at all.
std::string special_kind(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  if (!fs::exists(link)) return "";
  const fs::file_status target = fs::status(path, ec);
  const bool via_link = fs::is_symlink(link);
  std::string kind;
  switch (target.type()) {
    case fs::file_type::regular: return "";
    case fs::file_type::not_found: return "";  // a dangling link: replacing it harms nothing
    case fs::file_type::directory: kind = "a folder"; break;
    case fs::file_type::fifo: kind = "a FIFO"; break;
    case fs::file_type::character: kind = "a character device"; break;
    case fs::file_type::block: kind = "a block device"; break;
    case fs::file_type::socket: kind = "a socket"; break;
    default: kind = "not a regular file"; break;
  }
  return via_link ? "a link to " + kind : kind;
}
}  // namespace

void check_trace_destination(const std::filesystem::path& path, bool overwrite) {
  namespace fs = std::filesystem;
  using Reason = DestinationError::Reason;
  const std::string name = path.string();
  if (path.empty() || !path.has_filename())
    throw DestinationError(Reason::not_a_file_name, "'" + name + "' is not a file name (it names a folder)");
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  const fs::file_status folder_status = fs::status(folder, ec);
  if (!fs::exists(folder_status))
    throw DestinationError(Reason::no_folder, "folder '" + folder.string() + "' does not exist (create it first)");
  if (!fs::is_directory(folder_status))
    throw DestinationError(Reason::folder_is_file, "'" + folder.string() + "' is not a folder (it is a file), so '" +
                                                       name + "' cannot be created");
  if (fs::is_directory(fs::status(path, ec)))
    throw DestinationError(Reason::is_folder, "'" + name + "' is a folder, not a file name");
  // A trace replaces only a regular file: with --overwrite a FIFO, a device or a
  // socket would otherwise be replaced by a file (as root, /dev/full was).
  if (const std::string kind = special_kind(path); !kind.empty())
    throw DestinationError(Reason::not_regular, "'" + name + "' is " + kind +
                                                    ", not a regular file: a trace only ever replaces a regular file");
  // Creating and renaming files needs write and search permission on the folder.
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw DestinationError(Reason::not_writable, "folder " + folder.string() + " for trace " + name +
                                                     " is not writable");
  if (fs::exists(fs::symlink_status(path, ec)) && !overwrite)
    throw DestinationError(Reason::exists, "'" + name + "' already exists");
}

struct TraceWriter::Impl {
  Impl(h5::File f, bool ow) : file(std::move(f)), overwrite(ow) {}

  h5::File file;
  std::optional<h5::Node> trials;  // the open /trials group; reset before closing
  bool overwrite = false;
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
  const std::vector<std::string> suffixes = impl_->target_suffixes(trial.targets, where);
  std::vector<double> targets;
  for (const auto& t : trial.targets) targets.push_back(t.target);

  h5::Node group = impl_->trials->create_group(std::to_string(trial.index));
  group.set_uint64("seed", trial.seed);
  group.set_int32("complete", trial.complete ? 1 : 0);
  for (std::size_t k = 0; k < trial.targets.size(); ++k) {
    group.set_int32("rounds_to_" + suffixes[k], trial.targets[k].rounds);
  }
  for (std::size_t k = 0; k < trial.targets.size(); ++k) {
    group.set_int32("reached_" + suffixes[k], trial.targets[k].reached ? 1 : 0);
  }
  group.write_dataset("targets", targets);

  const auto& rows = trial.rows;
  group.write_dataset("round", column(rows, [](const RoundRow& r) { return r.round; }));
  group.write_dataset("variance", column(rows, [](const RoundRow& r) { return r.variance; }));
  group.write_dataset("error", column(rows, [](const RoundRow& r) { return r.error; }));
  group.write_dataset("mean_drift", column(rows, [](const RoundRow& r) { return r.mean_drift; }));
  group.write_dataset("alive", column(rows, [](const RoundRow& r) { return r.alive; }));
  group.write_dataset("groups", column(rows, [](const RoundRow& r) { return r.groups; }));
  group.write_dataset("failed_groups", column(rows, [](const RoundRow& r) { return r.failed_groups; }));
  group.write_dataset("decode_failures", column(rows, [](const RoundRow& r) { return r.decode_failures; }));
  group.write_dataset("bytes_sent", column(rows, [](const RoundRow& r) { return r.bytes_sent; }));
  group.write_dataset("time", column(rows, [](const RoundRow& r) { return r.time; }));
  group.write_dataset("detection_time", column(rows, [](const RoundRow& r) { return r.detection_time; }));

  // Flush per trial: cheap next to a trial's run time, and it bounds what a hard
  // kill (no chance to call finish) can lose from the temporary file.
  impl_->file.flush();

  SummaryRow s;
  s.trial = trial.index;
  s.seed = trial.seed;
  for (const auto& t : trial.targets) {
    s.rounds_to.push_back(t.rounds);
    s.reached.push_back(t.reached ? 1 : 0);
  }
  const RoundRow& last = rows.back();
  s.final_variance = last.variance;
  s.final_error = last.error;
  s.bytes_sent = last.bytes_sent;
  s.time = last.time;
  s.rounds = last.round;
  s.complete = trial.complete ? 1 : 0;
  impl_->summary.push_back(std::move(s));
}

void TraceWriter::write_optimum(const OptimumRecord& optimum) {
  impl_->require_open(tmp_path_, "write_optimum");
  const std::string where = "write_optimum to " + tmp_path_.string();
  impl_->require_kind("sgd", where);
  if (impl_->optimum_written) throw TraceError(where + ": /optimum was already written");
  h5::Node group = impl_->file.create_group("optimum");
  impl_->optimum_written = true;
  group.write_dataset("x", optimum.x);
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
  const std::vector<std::string> suffixes = impl_->target_suffixes(trial.targets, where);

  h5::Node group = impl_->trials->create_group(std::to_string(trial.index));
  group.set_uint64("seed", trial.seed);
  group.set_int32("complete", trial.complete ? 1 : 0);
  group.set_int32("diverged", trial.diverged ? 1 : 0);
  std::vector<double> targets;
  for (std::size_t k = 0; k < trial.targets.size(); ++k) {
    group.set_int32("steps_to_" + suffixes[k], trial.targets[k].rounds);
    targets.push_back(trial.targets[k].target);
  }
  for (std::size_t k = 0; k < trial.targets.size(); ++k)
    group.set_int32("reached_" + suffixes[k], trial.targets[k].reached ? 1 : 0);
  group.write_dataset("targets", targets);

  using Row = TrainingRow;
  const auto& rows = trial.rows;
  group.write_dataset("step", column(rows, [](const Row& r) { return r.step; }));
  group.write_dataset("round", column(rows, [](const Row& r) { return r.round; }));
  group.write_dataset("loss", column(rows, [](const Row& r) { return r.loss; }));
  group.write_dataset("gap", column(rows, [](const Row& r) { return r.gap; }));
  group.write_dataset("relative_gap", column(rows, [](const Row& r) { return r.relative_gap; }));
  group.write_dataset("distance", column(rows, [](const Row& r) { return r.distance; }));
  group.write_dataset("consensus", column(rows, [](const Row& r) { return r.consensus; }));
  group.write_dataset("accuracy", column(rows, [](const Row& r) { return r.accuracy; }));
  group.write_dataset("alive", column(rows, [](const Row& r) { return r.alive; }));
  group.write_dataset("groups", column(rows, [](const Row& r) { return r.groups; }));
  group.write_dataset("failed_groups", column(rows, [](const Row& r) { return r.failed_groups; }));
  group.write_dataset("decode_failures", column(rows, [](const Row& r) { return r.decode_failures; }));
  group.write_dataset("bytes_sent", column(rows, [](const Row& r) { return r.bytes_sent; }));
  group.write_dataset("time", column(rows, [](const Row& r) { return r.time; }));
  group.write_dataset("detection_time", column(rows, [](const Row& r) { return r.detection_time; }));
  impl_->file.flush();

  TrainingSummaryRow s;
  s.trial = trial.index;
  s.seed = trial.seed;
  for (const auto& t : trial.targets) {
    s.steps_to.push_back(t.rounds);
    s.reached.push_back(t.reached ? 1 : 0);
  }
  const Row& last = rows.back();
  s.final_gap = last.gap;
  s.final_relative_gap = last.relative_gap;
  s.final_consensus = last.consensus;
  s.final_accuracy = last.accuracy;
  s.bytes_sent = last.bytes_sent;
  s.time = last.time;
  s.steps = last.step;
  s.rounds = last.round;
  s.complete = trial.complete ? 1 : 0;
  s.diverged = trial.diverged ? 1 : 0;
  impl_->training_summary.push_back(std::move(s));
}

void TraceWriter::finish(bool complete) {
  impl_->require_open(tmp_path_, "finish");
  Impl& im = *impl_;
  // The schema promises /config; a run stopped before writing it still gets one.
  if (!im.config_written) write_config({}, "");

  if (im.kind == "sgd") {
    // A run stopped before its first trial still records what it was training.
    if (!im.optimum_written) im.file.create_group("optimum");
    h5::Node summary = im.file.create_group("summary");
    const auto& rows = im.training_summary;
    using Row = TrainingSummaryRow;
    summary.write_dataset("trial", column(rows, [](const Row& r) { return r.trial; }));
    summary.write_dataset("seed", column(rows, [](const Row& r) { return r.seed; }));
    const std::vector<double> targets = im.targets.value_or(std::vector<double>{});
    for (std::size_t k = 0; k < targets.size(); ++k)
      summary.write_dataset("steps_to_" + target_suffix(targets[k]),
                            column(rows, [k](const Row& r) { return r.steps_to[k]; }));
    for (std::size_t k = 0; k < targets.size(); ++k)
      summary.write_dataset("reached_" + target_suffix(targets[k]),
                            column(rows, [k](const Row& r) { return r.reached[k]; }));
    summary.write_dataset("final_gap", column(rows, [](const Row& r) { return r.final_gap; }));
    summary.write_dataset("final_relative_gap", column(rows, [](const Row& r) { return r.final_relative_gap; }));
    summary.write_dataset("final_consensus", column(rows, [](const Row& r) { return r.final_consensus; }));
    summary.write_dataset("final_accuracy", column(rows, [](const Row& r) { return r.final_accuracy; }));
    summary.write_dataset("bytes_sent", column(rows, [](const Row& r) { return r.bytes_sent; }));
    summary.write_dataset("time", column(rows, [](const Row& r) { return r.time; }));
    summary.write_dataset("steps", column(rows, [](const Row& r) { return r.steps; }));
    summary.write_dataset("rounds", column(rows, [](const Row& r) { return r.rounds; }));
    summary.write_dataset("complete", column(rows, [](const Row& r) { return r.complete; }));
    summary.write_dataset("diverged", column(rows, [](const Row& r) { return r.diverged; }));
  } else {
    // Scoped so that the group is closed before the file.
    h5::Node summary = im.file.create_group("summary");
    const auto& rows = im.summary;
    using Row = SummaryRow;
    summary.write_dataset("trial", column(rows, [](const Row& r) { return r.trial; }));
    summary.write_dataset("seed", column(rows, [](const Row& r) { return r.seed; }));
    const std::vector<double> targets = im.targets.value_or(std::vector<double>{});
    for (std::size_t k = 0; k < targets.size(); ++k) {
      summary.write_dataset("rounds_to_" + target_suffix(targets[k]),
                            column(rows, [k](const Row& r) { return r.rounds_to[k]; }));
    }
    for (std::size_t k = 0; k < targets.size(); ++k) {
      summary.write_dataset("reached_" + target_suffix(targets[k]),
                            column(rows, [k](const Row& r) { return r.reached[k]; }));
    }
    summary.write_dataset("final_variance", column(rows, [](const Row& r) { return r.final_variance; }));
    summary.write_dataset("final_error", column(rows, [](const Row& r) { return r.final_error; }));
    summary.write_dataset("bytes_sent", column(rows, [](const Row& r) { return r.bytes_sent; }));
    summary.write_dataset("time", column(rows, [](const Row& r) { return r.time; }));
    summary.write_dataset("rounds", column(rows, [](const Row& r) { return r.rounds; }));
    summary.write_dataset("complete", column(rows, [](const Row& r) { return r.complete; }));
  }

  im.file.update_int32("complete", complete ? 1 : 0);
  im.file.flush();
  // Only a file closed without error may take the final name.
  im.trials.reset();
  im.file.close();

  // From here on the temporary file is a finished trace: on failure keep it and
  // say where it is rather than lose a run.
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!im.overwrite) {
    // Atomic "rename unless the target exists" (Linux renameat2): a file that
    // appeared at the final name since the start is never replaced, not even in
    // the instant between a check and a rename. File systems without it fall
    // back to that check.
    if (::renameat2(AT_FDCWD, tmp_path_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE) == 0) {
      im.finished = true;
      return;
    }
    const int err = errno;
    if (err == EEXIST || fs::exists(fs::symlink_status(path_, ec))) {
      im.keep_temporary = true;
      throw TraceError("cannot move trace into place: " + path_.string() +
                       " appeared while the run was writing; the trace was left at " + tmp_path_.string());
    }
  }
  // With overwrite too, what appeared at the final name meanwhile is replaced
  // only if it is a regular file (a check, then the rename: not atomic, but it
  // closes all but an instant).
  if (const std::string kind = special_kind(path_); !kind.empty()) {
    im.keep_temporary = true;
    throw TraceError("cannot move trace into place: " + path_.string() + " is now " + kind +
                     ", not a regular file; the trace was left at " + tmp_path_.string());
  }
  fs::rename(tmp_path_, path_, ec);
  if (ec) {
    im.keep_temporary = true;
    throw TraceError("cannot rename " + tmp_path_.string() + " to " + path_.string() + ": " +
                     ec.message() + "; the trace was left at " + tmp_path_.string());
  }
  im.finished = true;
}

}  // namespace avb
