// What a setting accepts, declared once beside its field (protocols/options.hpp
// declares the protocols' settings this way). A declaration is visited by whoever
// needs it: the programs' flag parser, the range checks, describe() and the flag
// listings, so none of them repeats a flag's name, default, range or help.
//
// A visitor has four members, one per kind of value, each called with the flag,
// the field, what it accepts, its help, whether describe() records it for the
// options at hand (a lattice's q only under --quantizer lattice) and, for a
// setting several protocols share outside any family, the protocols that take
// it (Takers):
//   word(flag, field, const EnumNames&, help, recorded[, takers])
//   integer(flag, field, IntRange, help, recorded[, takers])
//   real(flag, field, RealRange, help, recorded[, takers])
//   custom(flag, field, const TextCodec<T>&, help, recorded[, takers])
#pragma once

#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"

namespace avb {

// The built-in protocols that take a shared setting, named in its declaration
// (protocols/options.hpp), from which their catalog rows take its flag. Empty for
// a protocol's own settings and a family's, whose rows name the table.
using Takers = std::span<const std::string_view>;

// Integers in [min, max]; a max of kNoIntLimit reads "an integer >= min".
inline constexpr long long kNoIntLimit = 1LL << 30;
struct IntRange {
  long long min = 0, max = kNoIntLimit;

  bool contains(long long v) const { return v >= min && v <= max; }
  std::string accepted() const {
    return max == kNoIntLimit ? "an integer >= " + std::to_string(min)
                              : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  }
};

// Finite numbers in an interval, ends open or closed, with a unit for the texts.
struct RealRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false, max_open = false;
  std::string_view unit;  // " (seconds)"

  bool contains(double v) const {
    return std::isfinite(v) && (min_open ? v > min : v >= min) && (max_open ? v < max : v <= max);
  }
  // "a number in (0, 1]", "a number >= 0 (seconds)", "a number > 0".
  std::string accepted() const {
    std::string text;
    if (std::isinf(max))
      text = std::string("a number ") + (min_open ? "> " : ">= ") + bound(min);
    else
      text = std::string("a number in ") + (min_open ? "(" : "[") + bound(min) + ", " + bound(max) +
             (max_open ? ")" : "]");
    return text + std::string(unit);
  }
  // Whole bounds in digits (1000000000, not 1e+09).
  static std::string bound(double v) {
    return v == std::floor(v) && std::fabs(v) < 1e15 ? std::to_string(static_cast<long long>(v)) : format_number(v);
  }
};

constexpr RealRange at_least(double min, std::string_view unit = {}) {
  RealRange r;
  r.min = min;
  r.unit = unit;
  return r;
}
constexpr RealRange above(double min) {
  RealRange r;
  r.min = min;
  r.min_open = true;
  return r;
}
constexpr RealRange interval(double min, double max, bool min_open = false) {
  RealRange r;
  r.min = min;
  r.max = max;
  r.min_open = min_open;
  return r;
}

// A structured value read from text and written back (a grid, a graph, a
// quantizer): `parse` throws ConfigError naming the flag, and format(parse(t))
// reads back the same; `type` is what --help shows ("AxB[xC...]").
template <class T>
struct TextCodec {
  std::string (*type)();
  void (*parse)(std::string_view text, T& field);
  std::string (*format)(const T& field);
};

// The visitor that checks values set in code (the flag parser checks the
// command line's already): throws ConfigError("--gamma: 0 is not a number in (0, 1]").
struct RangeCheck {
  template <class E, class Names>
  void word(std::string_view, const E&, const Names&, std::string_view, bool, Takers = {}) {}
  template <class Int>
  void integer(std::string_view flag, const Int& v, IntRange range, std::string_view, bool, Takers = {}) {
    if (!range.contains(static_cast<long long>(v)))
      throw ConfigError(std::string(flag) + ": " + std::to_string(v) + " is not " + range.accepted());
  }
  void real(std::string_view flag, double v, RealRange range, std::string_view, bool, Takers = {}) {
    if (!range.contains(v)) throw ConfigError(std::string(flag) + ": " + format_number(v) + " is not " + range.accepted());
  }
  template <class T>
  void custom(std::string_view, const T&, const TextCodec<T>&, std::string_view, bool, Takers = {}) {}
};

// The visitor that writes the settings as a run's description records them:
// (key, value) with the flag's name for key ("gamma"), in the order visited,
// those that apply only.
struct SettingTexts {
  std::vector<std::pair<std::string, std::string>> out;

  void keep(std::string_view flag, std::string value, bool recorded) {
    if (recorded) out.emplace_back(std::string(flag.substr(2)), std::move(value));
  }
  template <class E, class Names>
  void word(std::string_view flag, const E& v, const Names& names, std::string_view, bool recorded, Takers = {}) {
    keep(flag, std::string(names.name(v)), recorded);
  }
  template <class Int>
  void integer(std::string_view flag, const Int& v, IntRange, std::string_view, bool recorded, Takers = {}) {
    keep(flag, std::to_string(v), recorded);
  }
  void real(std::string_view flag, double v, RealRange, std::string_view, bool recorded, Takers = {}) {
    keep(flag, format_number(v), recorded);
  }
  template <class T>
  void custom(std::string_view flag, const T& v, const TextCodec<T>& codec, std::string_view, bool recorded,
              Takers = {}) {
    keep(flag, codec.format(v), recorded);
  }
};

// The visitor that lists the flags a table declares, in its order (a catalog
// row takes a protocol's own settings, or a family's, from its table).
struct SettingFlagNames {
  std::vector<std::string_view> flags;
  template <class... Rest> void word(std::string_view flag, Rest&&...) { flags.push_back(flag); }
  template <class... Rest> void integer(std::string_view flag, Rest&&...) { flags.push_back(flag); }
  template <class... Rest> void real(std::string_view flag, Rest&&...) { flags.push_back(flag); }
  template <class... Rest> void custom(std::string_view flag, Rest&&...) { flags.push_back(flag); }
};

// The visitor that lists the flags of the shared settings whose takers name
// `protocol`, in their order (the catalog's built-in rows start with them).
struct SharedFlagsOf {
  std::string_view protocol;
  std::vector<std::string_view> flags;

  void keep(std::string_view flag, Takers takers) {
    for (std::string_view name : takers)
      if (name == protocol) flags.push_back(flag);
  }
  template <class E, class Names>
  void word(std::string_view flag, const E&, const Names&, std::string_view, bool, Takers takers = {}) {
    keep(flag, takers);
  }
  template <class Int>
  void integer(std::string_view flag, const Int&, IntRange, std::string_view, bool, Takers takers = {}) {
    keep(flag, takers);
  }
  void real(std::string_view flag, double, RealRange, std::string_view, bool, Takers takers = {}) { keep(flag, takers); }
  template <class T>
  void custom(std::string_view flag, const T&, const TextCodec<T>&, std::string_view, bool, Takers takers = {}) {
    keep(flag, takers);
  }
};

}  // namespace avb
