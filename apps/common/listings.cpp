#include "common/listings.hpp"

#include <string>

#include <CLI/CLI.hpp>

#include "protocols/protocol.hpp"
#include "sim/failures.hpp"

namespace avb::app {

namespace {

std::string joined(const auto& items, auto&& text) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + std::string(text(item));
  return out;
}

// One line per protocol of the catalog: its name, whether it has a sequential form,
// its default and accepted failure semantics, its own flags, its summary.
std::string protocol_table() {
  std::string out = "# protocol\tsequential\tdefault_semantics\tsemantics\tflags\tsummary\n";
  for (const ProtocolInfo& info : protocol_catalog()) {
    out += std::string(info.name) + "\t" + (info.forms.sequential != nullptr ? "yes" : "no") + "\t" +
           std::string(to_string(info.default_semantics)) + "\t" +
           joined(info.semantics, [](FailureSemantics s) { return to_string(s); }) + "\t" +
           joined(info.flags, [](std::string_view f) { return f; }) + "\t" + std::string(info.summary) + "\n";
  }
  out.pop_back();  // the parser's exit adds the last newline
  return out;
}

// The protocols whose row takes `flag`, or "*" when no row names it (a flag of every run).
std::string protocols_of(const std::string& flag) {
  std::string out;
  for (const ProtocolInfo& info : protocol_catalog())
    if (takes(info.name, flag)) out += (out.empty() ? "" : ",") + std::string(info.name);
  return out.empty() ? "*" : out;
}

// One line per long flag of the program, in --help's order: its kind and accepted
// values, its default as --help shows it, the protocols it applies to.
std::string flag_table(const CLI::App& app, const FlagTable& declared) {
  std::string out = "# flag\tkind\taccepted\tdefault\tprotocols\n";
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_lnames().empty()) continue;
    const std::string flag = "--" + option->get_lnames().front();
    std::string kind = "builtin", accepted;
    for (const FlagDeclaration& d : declared)
      if (d.flag == flag) kind = d.kind, accepted = d.accepted;
    out += flag + "\t" + kind + "\t" + accepted + "\t" + option->get_default_str() + "\t" + protocols_of(flag) + "\n";
  }
  out.pop_back();
  return out;
}

}  // namespace

void add_listing_flags(CLI::App& app, const FlagTable& declared) {
  // CallForVersion is the exit the parser already handles: printed once, exit 0.
  app.add_flag_callback("--list-protocols", [] { throw CLI::CallForVersion(protocol_table(), 0); },
                        "print the protocol catalog, one tab-separated line per protocol, and exit")
      ->trigger_on_parse();
  app.add_flag_callback("--list-flags", [&app, &declared] { throw CLI::CallForVersion(flag_table(app, declared), 0); },
                        "print every flag with its kind, accepted values, default and protocols, tab-separated, "
                        "and exit")
      ->trigger_on_parse();
}

}  // namespace avb::app
