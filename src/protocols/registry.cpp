// The protocol registry: a fixed table, built on each call (no global state that
// SMPI ranks would share).
#include <algorithm>

#include "core/error.hpp"
#include "protocols/allreduce.hpp"
#include "protocols/protocol.hpp"

namespace avb {

std::vector<ProtocolInfo> protocol_catalog() {
  return {
      {"allreduce", "all-reduce over all peers (--collective); All-Reduce with restarts under abort",
       FailureSemantics::abort, {FailureSemantics::abort, FailureSemantics::survivors}},
  };
}

std::string protocol_names() {
  std::string names;
  for (const auto& info : protocol_catalog()) {
    if (!names.empty()) names += ", ";
    names += info.name;
  }
  return names;
}

namespace {
const ProtocolInfo* find_protocol(const std::vector<ProtocolInfo>& catalog, std::string_view name) {
  for (const auto& info : catalog)
    if (info.name == name) return &info;
  return nullptr;
}
}  // namespace

ProtocolOptions resolve(const ProtocolOptions& options) {
  const auto catalog = protocol_catalog();
  const ProtocolInfo* info = find_protocol(catalog, options.name);
  if (info == nullptr)
    throw ConfigError("--protocol: '" + options.name + "' is not one of {" + protocol_names() + "}");
  ProtocolOptions resolved = options;
  if (!resolved.on_failure) resolved.on_failure = info->default_semantics;
  const auto& supported = info->semantics;
  if (std::find(supported.begin(), supported.end(), *resolved.on_failure) == supported.end()) {
    std::string accepted;
    for (auto s : supported) accepted += (accepted.empty() ? "" : ", ") + std::string(to_string(s));
    throw ConfigError("--on-failure: '" + std::string(to_string(*resolved.on_failure)) +
                      "' is not supported by --protocol " + options.name + " (accepted: " + accepted + ")");
  }
  return resolved;
}

std::unique_ptr<Protocol> make_protocol(const ProtocolOptions& options, Comm& /*world*/) {
  const ProtocolOptions resolved = resolve(options);
  if (resolved.name == "allreduce") return make_allreduce(*resolved.on_failure, resolved.collective);
  throw ConfigError("--protocol: '" + options.name + "' is not one of {" + protocol_names() + "}");
}

std::vector<std::pair<std::string, std::string>> describe(const ProtocolOptions& options) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("protocol", options.name);
  out.emplace_back("on-failure", options.on_failure ? std::string(to_string(*options.on_failure)) : "default");
  out.emplace_back("collective", std::string(to_string(options.collective)));
  return out;
}

}  // namespace avb
