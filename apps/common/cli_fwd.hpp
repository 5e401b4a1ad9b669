// CLI11's types as the flag layer's headers name them, without CLI11 itself: its
// header is slow to compile (every file that includes it defines and initialises
// its validator objects), so only the sources that build or read a command line
// include <CLI/CLI.hpp>, and the programs get their parser from here.
#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
class Option;
class ParseError;
struct ConfigItem;
}  // namespace CLI

namespace avb::app {

// A program's command-line parser, made and destroyed where CLI11 is compiled.
struct AppDeleter {
  void operator()(CLI::App* app) const;
};
using AppPtr = std::unique_ptr<CLI::App, AppDeleter>;
AppPtr make_app(const std::string& description, const std::string& program);

// The parsed options as the trace's /config records them: every option at its
// text, defaults included, so that a --config replay reads them back.
std::string config_text(const CLI::App& app);

}  // namespace avb::app
