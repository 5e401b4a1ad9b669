#include "sim/availability.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <string_view>
#include <tuple>

#include "core/error.hpp"

namespace avb {

namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
constexpr std::string_view kHeader = "peer,down,up";

struct Spell {
  std::int64_t peer, down, up;
  std::size_t line;
};

std::string where(const std::string& name, std::size_t line) {
  return "--availability: " + name + ":" + std::to_string(line) + ": ";
}

// A whole field as an integer in [low, high], or `empty` when the field is empty
// and that is allowed (empty >= 0).
std::int64_t field(std::string_view text, const char* what, std::int64_t low, std::int64_t high, std::int64_t empty,
                   const std::string& at) {
  if (text.empty() && empty >= 0) return empty;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < low || v > high)
    throw ConfigError(at + what + " '" + std::string(text) + "' is not an integer in [" + std::to_string(low) + ", " +
                      std::to_string(high) + "]");
  return v;
}

}  // namespace

Availability Availability::parse(std::istream& in, const std::string& name) {
  constexpr std::int64_t max_round = std::numeric_limits<int>::max();
  std::vector<Spell> spells;
  std::string text;
  bool header = false;
  for (std::size_t line = 1; std::getline(in, text); ++line) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.empty() || text.front() == '#') continue;
    if (!header) {
      if (text != kHeader)
        throw ConfigError(where(name, line) + "the first line must be the header '" + std::string(kHeader) + "'");
      header = true;
      continue;
    }
    const std::string at = where(name, line);
    const std::size_t a = text.find(','), b = a == std::string::npos ? a : text.find(',', a + 1);
    if (b == std::string::npos || text.find(',', b + 1) != std::string::npos)
      throw ConfigError(at + "expected three fields, peer,down,up");
    const std::string_view s(text);
    Spell spell{field(s.substr(0, a), "peer", 0, max_round - 1, -1, at),
                field(s.substr(a + 1, b - a - 1), "down", 1, max_round, -1, at), 0, line};
    spell.up = field(s.substr(b + 1), "up", 2, max_round, kNever, at);
    if (spell.up <= spell.down)
      throw ConfigError(at + "up " + std::to_string(spell.up) + " is not after down " + std::to_string(spell.down) +
                        " (the peer is down in rounds down..up-1)");
    spells.push_back(spell);
  }
  if (in.bad()) throw ConfigError("--availability: " + name + ": cannot be read");
  if (!header) throw ConfigError("--availability: " + name + ": no header line '" + std::string(kHeader) + "'");

  std::stable_sort(spells.begin(), spells.end(),
                   [](const Spell& x, const Spell& y) { return std::tie(x.peer, x.down) < std::tie(y.peer, y.down); });
  Availability trace;
  const std::int64_t peers = spells.empty() ? 0 : spells.back().peer + 1;
  trace.offsets_.assign(static_cast<std::size_t>(peers) + 1, 0);
  trace.switches_.reserve(2 * spells.size());
  for (std::size_t i = 0; i < spells.size(); ++i) {
    const Spell& s = spells[i];
    if (i > 0 && spells[i - 1].peer == s.peer && s.down <= spells[i - 1].up)
      throw ConfigError(where(name, s.line) + "peer " + std::to_string(s.peer) + " is down from round " +
                        std::to_string(s.down) + ", which overlaps or touches its spell on line " +
                        std::to_string(spells[i - 1].line) + " (a peer that joins is up for at least its round)");
    trace.switches_.push_back(s.down);
    trace.switches_.push_back(s.up);
    trace.offsets_[static_cast<std::size_t>(s.peer) + 1] += 2;
  }
  for (std::size_t p = 1; p < trace.offsets_.size(); ++p) trace.offsets_[p] += trace.offsets_[p - 1];
  return trace;
}

Availability Availability::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--availability: cannot open '" + path + "'");
  return parse(in, path);
}

std::span<const std::int64_t> Availability::switches(int peer) const {
  if (peer < 0 || peer >= peers()) return {};
  const auto p = static_cast<std::size_t>(peer);
  return std::span<const std::int64_t>(switches_).subspan(offsets_[p], offsets_[p + 1] - offsets_[p]);
}

}  // namespace avb
