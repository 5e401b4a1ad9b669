#include "common/flag_values.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include "common/text.hpp"
#include "core/comm.hpp"
#include "core/error.hpp"

namespace avb::app {

namespace {
// A flag's value as quoted in an error line: printable, and cut at 60 characters
// (a 100,000-digit value need not be echoed back whole).
std::string shown(const std::string& text) {
  constexpr std::size_t max_chars = 60;
  return text.size() <= max_chars ? printable(text) : printable(text.substr(0, max_chars)) + "...";
}
}  // namespace

long long parse_integer(const std::string& flag, const std::string& text, long long min, long long max) {
  const std::string accepted = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  std::size_t used = 0;
  long long value = 0;
  try {
    // stoll would skip leading blanks, which parse_real refuses: refuse them alike.
    if (!text.empty() && !std::isspace(static_cast<unsigned char>(text[0]))) value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw ConfigError(flag + ": '" + shown(text) + "' is not " + accepted);
  if (value < min || value > max) throw ConfigError(flag + ": " + shown(text) + " is not " + accepted);
  return value;
}

double parse_real(const std::string& flag, const std::string& text, const std::string& accepted) {
  // strtod accepts what stod rejects as out of range (subnormals); overflow gives
  // inf, which resolve() refuses by range.
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const bool whole = !text.empty() && end == text.c_str() + text.size() && !std::isspace(static_cast<unsigned char>(text[0]));
  if (!whole || std::isnan(value)) throw ConfigError(flag + ": '" + shown(text) + "' is not " + accepted);
  return value;  // ranges are checked by avb::resolve(), which names the flag too
}

std::uint64_t parse_seed(const std::string& flag, const std::string& text) {
  // std::stoull would take "-1" as 2^64-1; seeds are written as plain digits.
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  std::uint64_t value = 0;
  bool fits = digits;
  if (digits) {
    try {
      value = std::stoull(text);
    } catch (const std::exception&) {
      fits = false;
    }
  }
  if (!fits) throw ConfigError(flag + ": '" + shown(text) + "' is not an integer in [0, 18446744073709551615]");
  return value;
}

int peers_on_this_machine(int n_peers, int peers_here) {
  if (peers_here > 0) return peers_here;
  if (engine_name() == "smpi") return n_peers;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name); v != nullptr && std::atoi(v) > 0) return std::atoi(v);
  return 1;
}

}  // namespace avb::app
