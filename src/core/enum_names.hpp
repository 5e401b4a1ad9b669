// One name table per enum that a flag sets: the table serves the parser, its
// error text, to_string and the names listed in --help, so that
// a value's spelling is declared once, next to the enum.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/suggest.hpp"

namespace avb {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, std::size_t N>
struct EnumNames {
  std::string_view flag;  // the flag that sets it, for the error text ("--failure")
  std::array<EnumName<E>, N> entries;

  // The names joined by `separator`: "a, b, c" for error texts, "a,b,c" for --help.
  std::string list(std::string_view separator = ", ") const {
    std::string out;
    for (const auto& e : entries) {
      if (!out.empty()) out += separator;
      out += e.name;
    }
    return out;
  }

  std::vector<std::string_view> names() const {
    std::vector<std::string_view> out;
    for (const auto& e : entries) out.push_back(e.name);
    return out;
  }

  // Throws ConfigError("--flag: 'text' is not one of {a, b}").
  E parse(std::string_view text) const {
    for (const auto& e : entries)
      if (e.name == text) return e.value;
    const std::vector<std::string_view> accepted = names();
    throw ConfigError(std::string(flag) + ": '" + std::string(text) + "' is not one of {" + list() + "}" +
                      did_you_mean(text, accepted));
  }

  // "?" for a value outside the table (a cast from a bad integer).
  std::string_view name(E value) const {
    for (const auto& e : entries)
      if (e.value == value) return e.name;
    return "?";
  }
};

}  // namespace avb
