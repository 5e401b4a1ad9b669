#include "common/app_support.hpp"

#include <mpi.h>

#include <csignal>
#include <cmath>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <unistd.h>

#ifdef AVB_ENGINE_SMPI
#include <simgrid/s4u/Engine.hpp>
#endif

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/watch.hpp"
#include "sim/compute.hpp"

namespace avb::app {

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;  // see install_stop_handlers()
extern "C" void on_stop_signal(int signo) { g_stop_signal = signo; }

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

}  // namespace

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

double slowest_peer_speed() {
  double mine = host_speed(), slowest = 0.0;
  check_mpi(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  return slowest;
}

bool options_agreed(const std::string& program, const std::string& problem) {
  int parsed = problem.empty() ? 1 : 0, everywhere = 0;
  check_mpi(MPI_Allreduce(&parsed, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  if (everywhere) return true;
  report_error(program, problem.empty() ? "the options could not be read on every rank (is the --config file on a "
                                          "file system all nodes see?)"
                                        : problem);
  return false;
}

RunInfo run_info(int argc, char** argv, const std::string& run_kind, const std::string& version,
                 const std::string& git_sha) {
  RunInfo info;
  info.avbench_version = version;
  info.git_sha = git_sha;
  info.command_line = join_command_line(argc, argv);
  info.engine = engine_name();
  info.mpi_library = mpi_library_version();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  info.n_peers = size;
  info.run_kind = run_kind;
  return info;
}

bool open_trace(const std::string& program, const std::string& out, bool overwrite, const RunInfo& info,
                const KeyValues& described, const std::string& config_text, std::unique_ptr<TraceWriter>& trace) {
  install_stop_handlers();
  int ok = 1;
  if (world_rank() == 0 && !out.empty()) {
    try {
      trace = std::make_unique<TraceWriter>(out, overwrite, info);  // checks the destination first
      trace->write_config(described, config_text);
    } catch (const DestinationError& e) {
      const bool exists = e.reason() == DestinationError::Reason::exists;
      report_error(program, std::string("--out: ") + e.what() +
                                (exists ? " (pass --overwrite to replace it, or choose another name)" : ""));
      ok = 0;
    } catch (const Error& e) {
      trace.reset();
      report_error(program, std::string("--out: ") + e.what());
      ok = 0;
    }
  }
  check_mpi(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (!ok) trace.reset();
  return ok != 0;
}

int run_with_mpi(int argc, char** argv, const char* program, int (*run)(int, char**)) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error on rank %d: %s\n", program, world_rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int stop_signal() { return g_stop_signal; }

std::string printable(const std::string& message) {
  // A message may quote bytes of a binary file (a --config key, a path): control
  // bytes and bytes that are not UTF-8 become \xHH, so that the line stays one
  // line of text (grep would call it a binary file otherwise).
  static constexpr char hex[] = "0123456789abcdef";
  std::string line;
  const auto* s = reinterpret_cast<const unsigned char*>(message.data());
  const std::size_t n = message.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = len > 0 && i + len <= n;
    for (std::size_t k = 1; valid && k < len; ++k) valid = (s[i + k] & 0xC0) == 0x80;
    if (valid && len == 1 && (c >= 0x20 || c == '\t') && c != 0x7f) {
      line += static_cast<char>(c);
    } else if (valid && len > 1) {
      line.append(message, i, len);
    } else if (c == '\n') {
      line += ' ';
    } else {
      line += "\\x";
      line += hex[c >> 4];
      line += hex[c & 15];
      len = 1;
    }
    i += len;
  }
  return line;
}

void report_error(const std::string& program, const std::string& message) {
  if (world_rank() != 0) return;
  const std::string line = printable(message);
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), line.c_str());
  std::fflush(stderr);
}

void report_warning(const std::string& program, const std::string& message) {
  if (world_rank() != 0) return;
  std::fprintf(stderr, "%s: warning: %s\n", program.c_str(), printable(message).c_str());
  std::fflush(stderr);
}

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

std::string join_command_line(int argc, char** argv) {
  // Quoted for a POSIX shell, so the recorded line can be run again as it is.
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_-+=.,/:@%") == std::string::npos;
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

namespace {
// A flag's value as quoted in an error line: printable, and cut at 60 characters
// (a 100,000-digit value need not be echoed back whole).
std::string shown(const std::string& text) {
  constexpr std::size_t max_chars = 60;
  return text.size() <= max_chars ? printable(text) : printable(text.substr(0, max_chars)) + "...";
}
}  // namespace

long long parse_integer(const std::string& flag, const std::string& text, long long min, long long max) {
  const std::string accepted = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  std::size_t used = 0;
  long long value = 0;
  try {
    // stoll would skip leading blanks, which parse_real refuses: refuse them alike.
    if (!text.empty() && !std::isspace(static_cast<unsigned char>(text[0]))) value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw ConfigError(flag + ": '" + shown(text) + "' is not " + accepted);
  if (value < min || value > max) throw ConfigError(flag + ": " + shown(text) + " is not " + accepted);
  return value;
}

double parse_real(const std::string& flag, const std::string& text, const std::string& accepted) {
  // strtod accepts what stod rejects as out of range (subnormals); overflow gives
  // inf, which resolve() refuses by range.
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const bool whole = !text.empty() && end == text.c_str() + text.size() && !std::isspace(static_cast<unsigned char>(text[0]));
  if (!whole || std::isnan(value)) throw ConfigError(flag + ": '" + shown(text) + "' is not " + accepted);
  return value;  // ranges are checked by avb::resolve(), which names the flag too
}

std::uint64_t parse_seed(const std::string& flag, const std::string& text) {
  // std::stoull would take "-1" as 2^64-1; seeds are written as plain digits.
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  std::uint64_t value = 0;
  bool fits = digits;
  if (digits) {
    try {
      value = std::stoull(text);
    } catch (const std::exception&) {
      fits = false;
    }
  }
  if (!fits) throw ConfigError(flag + ": '" + shown(text) + "' is not an integer in [0, 18446744073709551615]");
  return value;
}

void check_memory(const std::string& flag, const std::string& value, double bytes_per_peer, int n_peers) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: let the run try
  const double memory = static_cast<double>(pages) * static_cast<double>(page);
  int here = 1;
  if (engine_name() == "smpi") {
    here = n_peers;
  } else {
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
      if (const char* v = std::getenv(name); v != nullptr && std::atoi(v) > 0) {
        here = std::atoi(v);
        break;
      }
  }
  const double needed = bytes_per_peer * here;
  if (needed <= memory) return;
  char text[256];
  std::snprintf(text, sizeof text, "about %.3g GB for the %d peer(s) on this machine, more than its %.3g GB of memory",
                needed / 1e9, here, memory / 1e9);
  throw ConfigError(flag + ": " + value + " needs " + text + " (use a smaller value, or more machines)");
}

void refuse_extras(const CLI::App& app, int argc, char** argv) {
  refuse_extras(app.remaining());
  // CLI11 takes `--config ''` for no file at all, an empty --out means no trace,
  // an empty --data synthetic data: typed on the command line, an empty name is a
  // mistake (an unset shell variable), not a request to run without the file. A
  // recorded /config text lists the unset ones as "" and must replay: only the
  // command line is checked.
  const std::pair<std::string, const char*> named[] = {
      {"--config", "a file name (leave --config out to use the command line alone)"},
      {"--out", "a file name (leave --out out to run without a trace)"},
      {"--data", "a file name (leave --data out for synthetic data)"},
      {"--test-data", "a file name (leave --test-data out to measure accuracy on the training set)"}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    for (const auto& [flag, accepted] : named) {
      if (app.get_option_no_throw(flag) == nullptr) continue;
      if (arg == flag + "=" || (arg == flag && i + 1 < argc && argv[i + 1][0] == '\0'))
        throw ConfigError(flag + ": '' is not " + accepted);
    }
  }
}

void refuse_repeated_config_keys(const CLI::App& app, const std::vector<CLI::ConfigItem>& items) {
  std::vector<std::pair<const CLI::Option*, std::string>> seen;  // option, the spelling first met
  for (const CLI::ConfigItem& item : items) {
    if (!item.parents.empty() || item.name == "++" || item.name == "--") continue;  // sections: refused elsewhere
    // The lookup CLI11 makes for a config key (App::_parse_single_config).
    const CLI::Option* op = app.get_option_no_throw("--" + item.name);
    if (op == nullptr && item.name.size() == 1) op = app.get_option_no_throw("-" + item.name);
    if (op == nullptr) op = app.get_option_no_throw(item.name);
    if (op == nullptr) continue;  // not an option: refused as such by the parse
    const std::string twice = op->get_name() + ": given more than once in the --config file";
    // CLI11 merges consecutive lines of one key (quotes removed) into one item:
    // values for a repeatable flag (--target), a repetition for any other.
    if (item.inputs.size() > 1 && op->get_multi_option_policy() != CLI::MultiOptionPolicy::TakeAll)
      throw ConfigError(twice + " (as '" + printable(item.name) + "' on consecutive lines); give each option once");
    for (const auto& [earlier, spelling] : seen)
      if (earlier == op)
        throw ConfigError(twice + (spelling == item.name ? "" : " (as '" + printable(spelling) + "' and '" +
                                                                    printable(item.name) + "')") +
                          "; give each option once (a repeatable one as a list: key = [a, b])");
    seen.emplace_back(op, item.name);
  }
}

void refuse_repeated_config_keys(const CLI::App& app) {
  const CLI::Option* config = app.get_config_ptr();
  if (config == nullptr || config->count() == 0) return;
  for (const std::string& path : config->results())
    if (!path.empty()) refuse_repeated_config_keys(app, app.get_config_formatter_base()->from_file(path));
}

void refuse_extras(const std::vector<std::string>& extras) {
  if (extras.empty()) return;
  for (const auto& e : extras)
    if (e.size() > 1 && e[0] == '-')
      throw ConfigError(e.substr(0, e.find('=')) + ": unknown option (see --help for the accepted ones)");
  throw ConfigError("'" + extras.front() + "': unexpected argument (options take the form --flag value; see --help)");
}

std::string explain(const CLI::ParseError& error) {
  std::string what = error.what();
  if (error.get_name() == "FileError") return "--config: cannot read the file (" + what + ")";
  if (error.get_name() == "ConversionError") {
    // "Could not convert: --flag = value": only on/off flags convert in CLI11 here.
    const std::string marker = "Could not convert: ";
    const auto at = what.find(marker);
    if (at != std::string::npos) {
      const std::string rest = what.substr(at + marker.size());
      const auto eq = rest.find(" = ");
      if (eq != std::string::npos)
        return rest.substr(0, eq) + ": '" + rest.substr(eq + 3) + "' is not one of {true, false}";
    }
  }
  if (error.get_name() == "ConfigError") {
    // "INI was not able to parse <key>": a key that is not an option.
    const std::string marker = "parse ";
    const auto at = what.rfind(marker);
    const std::string key = at == std::string::npos ? what : what.substr(at + marker.size());
    return "--config: '" + key + "' is not an option of this program (see --help for the accepted ones)";
  }
  return what;
}

std::string trace_write_error(const std::string& path, const std::string& what) {
  // HDF5's messages run over several lines and end in a dump of the failed
  // write; the cause a user can act on is the errno text, when there is one.
  // A finished trace that could not be renamed is kept: the message says where.
  if (what.find("the trace was left at") != std::string::npos) return "--out: " + what;
  std::string cause = what;
  for (const char* known : {"No space left on device", "Disk quota exceeded", "Read-only file system",
                            "Input/output error", "File too large"})
    if (what.find(known) != std::string::npos) cause = known;
  if (cause == "No space left on device") cause += " (the file system is full)";
  return "--out: cannot write the trace " + path + ": " + cause +
         "; the run was stopped and nothing was written (an earlier file at that path is kept)";
}

int exit_code(const std::string& program, const std::string& trace_error, bool stopped) {
  int failed = trace_error.empty() ? 0 : 1;
  check_mpi(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (failed) {
    report_error(program, trace_error);
    return 1;
  }
  if (stopped) return 128 + (stop_signal() ? stop_signal() : 15);
  return 0;
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
  const std::time_t now = std::time(nullptr);
  if (now - last_progress_ < 3) return;
  last_progress_ = now;
  const double wall = std::difftime(now, started_);
  std::fprintf(stderr, "[%.0fs] trial %d/%d, round %d/%d, variance %.3e\n", wall, trial.index + 1, options_.trials,
               row.round, options_.rounds, row.variance);
  std::fflush(stderr);
}

void Reporter::on_trial(const TrialRecord& trial) {
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.write_trial(trial); });
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
  std::size_t cut_short = 0;
  for (const auto& trial : trials) {
    if (!trial.complete) {  // a cut-short trial would bias the means (trace-format.md)
      ++cut_short;
      continue;
    }
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
  if (!trace_error_.empty())
    std::printf("# run stopped: the trace could not be written (see stderr)\n");
  else if (!complete)
    std::printf("# run cut short by a stop request: %zu trial(s) recorded, %zu cut short and left out of the means\n",
                trials.size(), cut_short);
  std::fflush(stdout);
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.finish(complete); });
}

void abort_run(const std::string& program, const std::string& message) {
  std::fflush(stdout);
  // A stop signal means the launcher is ending the job (Open MPI sends SIGCONT and
  // SIGTERM when another rank aborted, which may wake this one from a SIGSTOP):
  // the peer that aborted has printed the line already.
  if (stop_signal() != 0) std::_Exit(128 + stop_signal());
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), printable(message).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitStalled);
  std::_Exit(kExitStalled);  // MPI_Abort does not return; this is for the compiler
}

struct DeadlockGuard::State {
  std::string program;
  std::function<void()> save;
};

DeadlockGuard::DeadlockGuard(std::string program, std::function<void()> save)
    : state_(std::make_shared<State>(State{std::move(program), std::move(save)})) {
#ifdef AVB_ENGINE_SMPI
  // SimGrid calls this from its own context once no actor can move, before it
  // kills them all; nothing can be sent any more, so no MPI here.
  simgrid::s4u::Engine::on_deadlock_cb([state = state_] {
    const std::string blocked = describe_blocked_peers();
    if (state->save) state->save();
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: deadlock: no simulated peer can move: %s\n", state->program.c_str(),
                 printable(blocked).c_str());
    std::fflush(stderr);
    std::_Exit(kExitStalled);
  });
#endif
}

DeadlockGuard::~DeadlockGuard() { state_->save = nullptr; }

}  // namespace avb::app
