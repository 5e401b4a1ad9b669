// Helpers shared by the unit tests.
#pragma once

#include <string>

#include "core/error.hpp"

namespace avb::test {

// The ConfigError message of f(), or "" if it did not throw one.
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

inline bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace avb::test
