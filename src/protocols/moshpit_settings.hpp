// Moshpit All-Reduce's own settings (protocols/moshpit.cpp): the struct both
// forms take and its declaration table, which ProtocolOptions' table
// (protocols/options.hpp) visits and its catalog row takes its flags from.
#pragma once

#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/settings.hpp"
#include "protocols/grid.hpp"

namespace avb {

struct MoshpitSettings {
  // The grid's sides (empty: resolve() sets d = 2, M = ceil(sqrt(N))), where peers
  // sit, and how group keys advance.
  std::vector<int> grid;
  Placement placement = Placement::random;
  KeyUpdate key_update = KeyUpdate::axis;
};

// "default" stands for the empty grid, which resolve() picks for N.
inline constexpr TextCodec<std::vector<int>> kGridText{
    [] { return std::string("AxB[xC...]"); },
    [](std::string_view text, std::vector<int>& field) {
      field = text == "default" ? std::vector<int>{} : parse_grid(text);
    },
    [](const std::vector<int>& field) { return field.empty() ? std::string("default") : grid_to_string(field); }};

template <class S, class Visitor>
  requires std::same_as<std::remove_const_t<S>, MoshpitSettings>
void for_each_setting(S& s, Visitor&& v) {
  v.custom("--grid", s.grid, kGridText,
           "virtual grid, sides joined by 'x' such as 32x32 or 8x8x8 (default: MxM, M = ceil(sqrt(N)))", true);
  v.word("--placement", s.placement, kPlacementNames,
         "peers in random distinct cells (random) or row-major by rank (rank)", true);
  v.word("--key-update", s.key_update, kKeyUpdateNames,
         "average along axis (t-1) mod d (axis) or Algorithm 1's chunk-index keys (chunk)", true);
}

}  // namespace avb
