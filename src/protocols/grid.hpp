// The virtual grid of Moshpit All-Reduce: its shape, and where peers sit in it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.hpp"

namespace avb {

enum class Placement {
  random,  // N distinct cells drawn from the placement stream (the authors' simulation)
  rank,    // peer p in cell p, row-major: the last axis varies fastest
};
inline constexpr EnumNames<Placement, 2> kPlacementNames{
    "--placement", {{{Placement::random, "random"}, {Placement::rank, "rank"}}}};
Placement parse_placement(std::string_view name);  // throws ConfigError (--placement)
std::string_view to_string(Placement placement);

// How a Moshpit peer's group key changes from round to round (docs/protocols.md).
enum class KeyUpdate {
  axis,   // round t averages along axis (t-1) mod d of the grid (the authors' simulation)
  chunk,  // Algorithm 1: key <- (key[1:], position in the group's shuffled order) (hivemind)
};
inline constexpr EnumNames<KeyUpdate, 2> kKeyUpdateNames{
    "--key-update", {{{KeyUpdate::axis, "axis"}, {KeyUpdate::chunk, "chunk"}}}};
KeyUpdate parse_key_update(std::string_view name);  // throws ConfigError (--key-update)
std::string_view to_string(KeyUpdate update);

// Grid cells are capped so that placing peers (O(cells) per peer and trial) stays cheap.
constexpr std::int64_t kMaxGridCells = std::int64_t{1} << 24;

// "32x32" or "8x8x8" -> sides; throws ConfigError (--grid) on anything else.
std::vector<int> parse_grid(std::string_view text);
std::string grid_to_string(std::span<const int> sides);
// The default for N peers: d = 2, M = ceil(sqrt(N)).
std::vector<int> default_grid(int n_peers);
std::int64_t grid_cells(std::span<const int> sides);
// Throws ConfigError (--grid) unless the grid has room for n_peers.
void check_grid(std::span<const int> sides, int n_peers);

// The cell of every peer 0..n-1. `rank`: peer p in cell p. `random`: a
// Fisher-Yates shuffle of all cells run from the back, where step i (cells-1 down
// to cells-n) swaps entries i and below(i + 1) drawn at counter (0, i, 0) of the
// placement stream; peer p takes the entry at cells-1-p.
std::vector<std::int64_t> place_peers(std::uint64_t seed, std::span<const int> sides, int n, Placement placement);

// Coordinate `axis` of a row-major cell index, and the stride of that axis.
std::int64_t axis_stride(std::span<const int> sides, int axis);
int cell_coordinate(std::span<const int> sides, std::int64_t cell, int axis);

}  // namespace avb
