#include "common/cli_checks.hpp"

#include <new>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "common/mpi_entry.hpp"
#include "common/text.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"

namespace avb::app {

void refuse_extras(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> flags;
  for (const CLI::Option* op : app.get_options())
    if (op->get_name().rfind("--", 0) == 0) flags.push_back(op->get_name());
  // A value typed after a switch (--stop-at-target true) is left over: say so.
  const std::vector<std::string> extras = app.remaining();
  for (int i = 2; i < argc && !extras.empty(); ++i) {
    const CLI::Option* before = app.get_option_no_throw(argv[i - 1]);
    if (extras.front() == argv[i] && before != nullptr && before->get_expected_max() == 0)
      throw ConfigError(std::string(argv[i - 1]) + ": a switch, which takes no value ('" + extras.front() +
                        "' follows it): write " + argv[i - 1] + " alone to turn it on, or " + argv[i - 1] +
                        "=false to leave it off");
  }
  refuse_extras(extras, flags);
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

void file_options(const CLI::App& app, const std::set<std::string>& outputs, NamedPaths& inputs,
                  std::set<std::string>& text_keys) {
  if (const CLI::Option* config = app.get_config_ptr(); config != nullptr && config->count() > 0)
    for (const std::string& path : config->results()) inputs.emplace_back(config->get_name(), path);
  for (const CLI::Option* op : app.get_options()) {
    if (op->get_type_name() != "FILE") continue;
    const std::string flag = op->get_name();
    text_keys.insert(flag.substr(2));
    if (outputs.count(flag) == 0 && op->count() > 0)
      for (const std::string& path : op->results()) inputs.emplace_back(flag, path);
  }
}

void refuse_repeated_config_keys(const CLI::App& app) {
  const CLI::Option* config = app.get_config_ptr();
  if (config == nullptr || config->count() == 0) return;
  for (const std::string& path : config->results())
    if (!path.empty()) refuse_repeated_config_keys(app, app.get_config_formatter_base()->from_file(path));
}

void refuse_extras(const std::vector<std::string>& extras, const std::vector<std::string>& flags) {
  if (extras.empty()) return;
  for (const auto& e : extras)
    if (e.size() > 1 && e[0] == '-') {
      const std::string flag = e.substr(0, e.find('='));
      const std::string suggestion = did_you_mean(flag, flags);
      throw ConfigError(flag + ": unknown option" + (suggestion.empty() ? " (see --help for the accepted ones)" : suggestion));
    }
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

namespace {
// A value refused while CLI11 parsed (typed options convert as they are read)
// must not hide a --help, --version or --list-* given with it.
void parse_asking_first(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const Error&) {
    for (const char* exit_flag : {"--version", "--list-protocols", "--list-flags"}) {
      CLI::Option* option = app.get_option_no_throw(exit_flag);
      if (option != nullptr && option->count() > 0) option->run_callback();
    }
    if (app.get_help_ptr() != nullptr && app.get_help_ptr()->count() > 0) throw CLI::CallForHelp();
    throw;
  }
}
}  // namespace

bool parse_command_line(CLI::App& app, int argc, char** argv, int rank, std::string& problem,
                        const std::function<void()>& convert) {
  try {
    parse_asking_first(app, argc, argv);
    refuse_extras(app, argc, argv);
    refuse_repeated_config_keys(app);
    convert();
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) std::fprintf(table_out(), "%s", app.help().c_str());
    return true;
  } catch (const CLI::CallForVersion& e) {
    if (rank == 0) std::fprintf(table_out(), "%s\n", e.what());
    return true;
  } catch (const CLI::ParseError& e) {
    problem = explain(e);
  } catch (const Error& e) {
    problem = e.what();
  } catch (const std::bad_alloc&) {  // a check that builds something (a graph) under ulimit -v
    problem = "--peers: checking the options ran out of memory (physical memory or ulimit -v); use fewer peers "
              "or a smaller --topology, or see --dry-run";
  }
  return false;
}

void AppDeleter::operator()(CLI::App* app) const { delete app; }

AppPtr make_app(const std::string& description, const std::string& program) {
  return AppPtr(new CLI::App(description, program));
}

std::string config_text(const CLI::App& app) { return app.config_to_str(true, false); }

std::optional<int> parse_on_every_rank(const std::string& program, CLI::App& app, int argc, char** argv,
                                       const std::function<void()>& convert) {
  // Checking the options can take seconds (sgd_bench's estimate reads a LIBSVM
  // --data file through, and polls the stop as it does): the handlers are
  // installed first, and a stop during the checks ends the program after them.
  install_stop_handlers();
  std::string problem;
  bool stopped = false;
  const auto checked = [&] {
    try {
      convert();
    } catch (const StopRequested&) {  // the options are left half resolved: the run cannot go on
      stopped = true;
    }
  };
  if (parse_command_line(app, argc, argv, world_rank(), problem, checked)) return 0;
  return options_verdict(program, problem, "checking the options", stopped);
}

}  // namespace avb::app
