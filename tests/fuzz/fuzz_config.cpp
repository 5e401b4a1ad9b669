// libFuzzer target: the bytes are the text of an averaging_bench --config file.
// Parsed and resolved as the app does (averaging_flags.hpp) for a few peer counts;
// a bad file must end in CLI::ParseError or avb::Error, which the app turns into
// its one-line message and exit code 2. Anything else escapes and is a finding.
// A `topology = file:PATH` line makes resolve() read PATH: run_fuzzer.sh runs
// from a scratch folder so that relative paths stay there.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "common/app_support.hpp"
#include "common/averaging_flags.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream config(std::string(reinterpret_cast<const char*>(data), size));
  CLI::App app{"averaging_bench", "averaging_bench"};
  avb::app::AveragingCli cli;
  avb::app::define_averaging_flags(app, cli);
  try {
    app.parse_from_stream(config);
    avb::app::refuse_extras(app.remaining());
  } catch (const CLI::ParseError& e) {
    (void)avb::app::explain(e);  // the app's message for it must not fail either
    return 0;
  } catch (const avb::Error&) {
    return 0;
  }
  // Peer counts that take different branches: one peer, a power of two, neither.
  for (const int n_peers : {1, 8, 12}) {
    try {
      const avb::AveragingOptions options = avb::app::averaging_options(cli, n_peers);
      (void)avb::describe(options);  // recorded in every trace
    } catch (const avb::Error&) {
    }
  }
  return 0;
}
