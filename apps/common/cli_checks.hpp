// What CLI11 leaves unchecked, and its errors as one line naming the flag.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/cli_fwd.hpp"
#include "common/file_identity.hpp"

namespace avb::app {

// The files a parsed command line names. Every option typed FILE goes to
// `text_keys` (its name without "--": a file name stays text wherever options are
// written out); the --config files and the FILE options not in `outputs` go to
// `inputs` (flag, path).
void file_options(const CLI::App& app, const std::set<std::string>& outputs, NamedPaths& inputs,
                  std::set<std::string>& text_keys);

// Refuses arguments CLI11 did not recognise (collected with allow_extras).
// flags: the accepted ones, for a suggestion when one is mistyped.
void refuse_extras(const std::vector<std::string>& extras, const std::vector<std::string>& flags = {});
// The same for app.remaining(), and refuses an empty --config, --out, --data or
// --test-data typed on the command line (argc, argv: main's).
void refuse_extras(const CLI::App& app, int argc, char** argv);
// Refuses a --config file that gives an option more than once, in any spelling
// CLI11 reads as that option (rounds, "rounds", 'rounds', --rounds): CLI11 keeps
// the first and drops the others without a word. Consecutive lines of one key are
// one item to CLI11 (a repeatable flag's values); for others it refuses them.
// `items`: the file as CLI11's config reader returns it.
void refuse_repeated_config_keys(const CLI::App& app, const std::vector<CLI::ConfigItem>& items);
// The same for the file named by --config, if any (after app.parse()).
void refuse_repeated_config_keys(const CLI::App& app);

// CLI11's parse errors as one line that starts with the flag concerned.
std::string explain(const CLI::ParseError& error);

// Parses the command line into the typed fields, refuses what CLI11 lets through
// (above), then runs `convert` (which resolves the options). True when the program
// is done: --help or --version was printed (rank 0), also when another value is
// bad. Otherwise a bad input leaves its one line in `problem`.
bool parse_command_line(CLI::App& app, int argc, char** argv, int rank, std::string& problem,
                        const std::function<void()>& convert);

// The start both programs share, collective: every rank parses the same arguments
// (parse_command_line) and the verdicts are combined (options_verdict), so that a
// file readable on some nodes only (--config) cannot leave ranks waiting for
// others that quit. Only rank 0 speaks. Returns the exit code when the program is
// done (0 after --help or --version, 2 after bad input, 128 + the signal after a
// stop while the options were checked), nothing when it goes on.
std::optional<int> parse_on_every_rank(const std::string& program, CLI::App& app, int argc, char** argv,
                                       const std::function<void()>& convert);

}  // namespace avb::app
