#include "oracle_command.hpp"

#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "common/cli_checks.hpp"
#include "core/error.hpp"

namespace avb::oracle {

int run_command(CLI::App& app, int argc, char** argv, const std::function<void(int)>& print_rows) {
  // The apps declare --peers themselves (for --engine sequential): then it is theirs.
  int peers = 0;
  CLI::Option* option = app.get_option_no_throw("--peers");
  if (option == nullptr)
    option = app.add_option("--peers", peers, "peers, an integer >= 1")->check(CLI::Range(1, 1 << 24))->group("Oracle");
  option->required();
  try {
    app.parse(argc, argv);
    avb::app::refuse_extras(app.remaining());
    if (peers == 0) peers = option->as<int>();
    if (peers < 1) throw avb::ConfigError("--peers: required, an integer in [1, 2^24]");
    print_rows(peers);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n", app.get_name().c_str(), avb::app::explain(e).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", app.get_name().c_str(), e.what());
    return 2;
  }
  return 0;
}

}  // namespace avb::oracle
