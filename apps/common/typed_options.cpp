#include "common/typed_options.hpp"

#include <charconv>
#include <utility>

#include <CLI/CLI.hpp>

#include "common/flag_values.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace avb::app {

std::string default_text(double value) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

long long TypedOptions::parse(const std::string& flag, const std::string& text, long long min, long long max) {
  return parse_integer(flag, text, min, max);
}

CLI::Option* TypedOptions::add(const std::string& flag, const std::string& default_text, const std::string& type,
                               const std::string& help, std::function<void(const std::string&)> set) {
  ChangedFlags* changed = &changed_;
  auto* option = app_.add_option_function<std::string>(
      flag,
      [flag, default_text, changed, set = std::move(set)](const std::string& text) {
        set(text);
        if (text != default_text) changed->insert(flag);
      },
      help);
  option->default_str(default_text)->type_name(type)->group(group_);
  return option;
}

CLI::Option* TypedOptions::seed(const std::string& flag, std::uint64_t& field, const std::string& help) {
  declare(flag, "seed", "[0, 18446744073709551615]");
  return add(flag, std::to_string(field), "INT", help,
             [&field, flag](const std::string& text) { field = parse_seed(flag, text); });
}

CLI::Option* TypedOptions::real(const std::string& flag, double& field, const std::string& accepted,
                                const std::string& help, std::function<bool(double)> in_range) {
  declare(flag, "real", accepted);
  return add(flag, default_text(field), "FLOAT", help, [&field, flag, accepted, in_range](const std::string& text) {
    const double value = parse_real(flag, text, accepted);
    if (in_range && !in_range(value)) throw ConfigError(flag + ": " + format_number(value) + " is not " + accepted);
    field = value;
  });
}

CLI::Option* TypedOptions::reals(const std::string& flag, std::vector<double>& field, const std::string& accepted,
                                 const std::string& help) {
  declare(flag, "reals", accepted);
  std::string shown;
  for (double v : field) shown += (shown.empty() ? "" : ",") + default_text(v);
  auto* option = app_.add_option_function<std::vector<std::string>>(
      flag,
      [&field, flag, accepted](const std::vector<std::string>& texts) {
        field.clear();
        for (const auto& text : texts) field.push_back(parse_real(flag, text, accepted));
      },
      help);
  option->default_str("[" + shown + "]")->type_name("FLOAT")->group(group_);
  option->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return option;
}

CLI::Option* TypedOptions::custom(const std::string& flag, const std::string& default_text, const std::string& type,
                                  const std::string& help, std::function<void(const std::string&)> set) {
  declare(flag, "custom", type);
  return add(flag, default_text, type, help, std::move(set));
}

CLI::Option* TypedOptions::text(const std::string& flag, std::string& field, const std::string& type,
                                const std::string& help) {
  declare(flag, "text", type);
  return add(flag, field, type, help, [&field](const std::string& text) { field = text; });
}

CLI::Option* TypedOptions::flag(const std::string& flag, bool& field, const std::string& help) {
  declare(flag, "switch", "");
  return app_.add_flag(flag, field, help)->group(group_);
}

void add_version_flag(CLI::App& app, const std::string& program, const std::string& version,
                      const std::string& git_hash) {
  app.set_version_flag("--version", program + " " + version + " (git " + git_hash + ")",
                       "print the version and the git commit it was built from, and exit");
}

}  // namespace avb::app
