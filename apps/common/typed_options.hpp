// Typed options: each flag is declared once, as a typed field of the app's options
// struct, with one of the strict parsers of flag_values.hpp (or an enum's name
// table) as its validator. CLI11 hands the text over as typed, the parser throws
// ConfigError with today's one-line message, and --help shows INT, FLOAT or the
// accepted names, grouped by concern.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/cli_fwd.hpp"
#include "core/enum_names.hpp"

namespace avb::app {

// The flags given a value whose text differs from the default's. A recorded
// /config lists every flag at its default text, so a replay changes none.
using ChangedFlags = std::set<std::string>;

// What a flag accepts, as --list-flags prints it (apps/common/listings.hpp): its
// kind (integer, seed, real, reals, word, custom, text, switch) and its values
// ("[1, 1073741824]", "a number in [0, 1]", "ring|doubling").
struct FlagDeclaration {
  std::string flag, kind, accepted;
};
using FlagTable = std::vector<FlagDeclaration>;

// A default as --help and the recorded /config show it: the shortest text that
// reads back to the same double (300, not 3e+02).
std::string default_text(double value);

class TypedOptions {
 public:
  TypedOptions(CLI::App& app, ChangedFlags& changed, FlagTable& declared)
      : app_(app), changed_(changed), declared_(declared) {}

  // The options added next are listed in --help under `name`.
  TypedOptions& group(std::string name) {
    group_ = std::move(name);
    return *this;
  }

  // An integer in [min, max] (parse_integer).
  template <class Int>
  CLI::Option* integer(const std::string& flag, Int& field, long long min, long long max, const std::string& help) {
    declare(flag, "integer", "[" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return add(flag, std::to_string(field), "INT", help,
               [&field, flag, min, max](const std::string& text) {
                 field = static_cast<Int>(parse(flag, text, min, max));
               });
  }
  // A seed: plain digits in [0, 2^64) (parse_seed).
  CLI::Option* seed(const std::string& flag, std::uint64_t& field, const std::string& help);
  // A number; `accepted` ("a number >= 0") is the error text. The range is checked
  // here when `in_range` is given, else by resolve().
  CLI::Option* real(const std::string& flag, double& field, const std::string& accepted, const std::string& help,
                    std::function<bool(double)> in_range = {});
  // A repeatable number (--target): every value given replaces the defaults.
  CLI::Option* reals(const std::string& flag, std::vector<double>& field, const std::string& accepted,
                     const std::string& help);
  // One of an enum's names.
  template <class E, std::size_t N>
  CLI::Option* word(const std::string& flag, E& field, const EnumNames<E, N>& names, const std::string& help) {
    declare(flag, "word", names.list("|"));
    return add(flag, std::string(names.name(field)), "{" + names.list(",") + "}", help,
               [&field, &names](const std::string& text) { field = names.parse(text); });
  }
  // Text converted by `set` (structured values: a grid, a topology), shown as `type`.
  CLI::Option* custom(const std::string& flag, const std::string& default_text, const std::string& type,
                      const std::string& help, std::function<void(const std::string&)> set);
  // Text kept as text (a file name, a name checked later).
  CLI::Option* text(const std::string& flag, std::string& field, const std::string& type, const std::string& help);
  // An on/off flag.
  CLI::Option* flag(const std::string& flag, bool& field, const std::string& help);

 private:
  void declare(const std::string& flag, const std::string& kind, const std::string& accepted) {
    declared_.push_back({flag, kind, accepted});
  }
  static long long parse(const std::string& flag, const std::string& text, long long min, long long max);
  CLI::Option* add(const std::string& flag, const std::string& default_text, const std::string& type,
                   const std::string& help, std::function<void(const std::string&)> set);

  CLI::App& app_;
  ChangedFlags& changed_;
  FlagTable& declared_;
  std::string group_ = "Options";
};

// --version: "<program> <version> (git <commit>)", exit 0 (CLI::CallForVersion).
void add_version_flag(CLI::App& app, const std::string& program, const std::string& version,
                      const std::string& git_hash);

}  // namespace avb::app
