#include "common/protocol_flags.hpp"

#include <algorithm>
#include <utility>

#include "common/flag_values.hpp"
#include "core/error.hpp"
#include "protocols/gossip.hpp"

namespace avb::app {

namespace {

// "gossip, pairwise": the protocols whose catalog row takes `flag`.
std::string protocols_taking(std::string_view flag) {
  std::string out;
  for (const auto& info : avb::protocol_catalog())
    if (avb::takes(info.name, flag)) out += (out.empty() ? "" : ", ") + std::string(info.name);
  return out;
}

// Binds each setting to its flag, from its declaration (for_each_setting,
// for_each_failure_setting): a protocol's help names the protocols whose catalog
// rows take it.
struct SettingFlags {
  TypedOptions& add;

  static std::string help_of(std::string_view flag, std::string_view help) {
    const std::string takers = protocols_taking(flag);
    return std::string(help) + (takers.empty() ? "" : " [--protocol " + takers + "]");
  }
  template <class E, class Names>
  void word(std::string_view flag, E& field, const Names& names, std::string_view help, bool, Takers = {}) {
    add.word(std::string(flag), field, names, help_of(flag, help));
  }
  template <class Int>
  void integer(std::string_view flag, Int& field, IntRange range, std::string_view help, bool, Takers = {}) {
    add.integer(std::string(flag), field, range.min, range.max, help_of(flag, help));
  }
  void real(std::string_view flag, double& field, RealRange range, std::string_view help, bool, Takers = {}) {
    add.real(std::string(flag), field, range.accepted(), help_of(flag, help),
             [range](double v) { return range.contains(v); });
  }
  template <class T>
  void custom(std::string_view flag, T& field, const TextCodec<T>& codec, std::string_view help, bool, Takers = {}) {
    add.custom(std::string(flag), codec.format(field), codec.type(), help_of(flag, help),
               [&field, &codec](const std::string& text) { codec.parse(text, field); });
  }
};

}  // namespace

void add_protocol_flags(CLI::App& app, ProtocolFlags& f, RunOptions& o) {
  TypedOptions add(app, f.changed, f.declared);
  add.group("Protocol");
  std::string names = avb::protocol_names();
  names.erase(std::remove(names.begin(), names.end(), ' '), names.end());
  add.text("--protocol", o.protocol.name, "{" + names + "}", "averaging protocol (docs/protocols.md)");
  for_each_setting(o.protocol, SettingFlags{add});
  add.group("Failures");
  for_each_failure_setting(o, SettingFlags{add});
}

void read_availability(const ProtocolFlags& f, RunOptions& o) {
  if (o.availability_path.empty()) return;
  if (!f.changed.count("--failure")) o.failure = FailureKind::trace;
  o.availability = std::make_shared<const Availability>(Availability::read(o.availability_path));
}

void refuse_foreign_flags(const ProtocolFlags& f, const std::string& protocol) {
  const auto own = protocol_flags(protocol);
  for (const std::string& flag : f.changed) {
    if (protocols_taking(flag).empty() || std::find(own.begin(), own.end(), flag) != own.end()) continue;
    std::string accepted;
    for (auto name : own) accepted += (accepted.empty() ? "" : ", ") + std::string(name);
    throw ConfigError(flag + ": does not apply to --protocol " + protocol + " (its options: " +
                      (accepted.empty() ? "none" : accepted) + ")");
  }
}

}  // namespace avb::app
