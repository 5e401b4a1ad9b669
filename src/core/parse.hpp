// Numbers read from text: flag values and the words of input files.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace avb {

// The whole of `word` as a decimal int, or nothing when it is empty, has anything
// but the number (a '+', blanks, trailing text) or does not fit an int.
inline std::optional<int> parse_int(std::string_view word) {
  if (word.empty()) return std::nullopt;
  int value = 0;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace avb
