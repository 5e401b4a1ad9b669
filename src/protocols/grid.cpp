#include "protocols/grid.hpp"

#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace avb {

Placement parse_placement(std::string_view name) { return kPlacementNames.parse(name); }

std::string_view to_string(Placement placement) { return kPlacementNames.name(placement); }

KeyUpdate parse_key_update(std::string_view name) { return kKeyUpdateNames.parse(name); }

std::string_view to_string(KeyUpdate update) { return kKeyUpdateNames.name(update); }

std::vector<int> parse_grid(std::string_view text) {
  const std::string bad = "--grid: '" + std::string(text) +
                          "' is not a grid shape: sides >= 1 joined by 'x', such as 32x32 or 8x8x8";
  std::vector<int> sides;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(text.find('x', start), text.size());
    const std::string_view field = text.substr(start, end - start);
    if (field.empty() || field.size() > 9) throw ConfigError(bad);
    int side = 0;
    for (char c : field) {
      if (c < '0' || c > '9') throw ConfigError(bad);
      side = side * 10 + (c - '0');
    }
    if (side < 1) throw ConfigError(bad);
    sides.push_back(side);
    if (end == text.size()) break;
    start = end + 1;
  }
  std::int64_t cells = 1;
  for (int s : sides) {
    cells *= s;
    if (cells > kMaxGridCells)
      throw ConfigError("--grid: '" + std::string(text) + "' has more than " + std::to_string(kMaxGridCells) +
                        " cells; use fewer or shorter axes");
  }
  return sides;
}

std::string grid_to_string(std::span<const int> sides) {
  std::string text;
  for (int s : sides) text += (text.empty() ? "" : "x") + std::to_string(s);
  return text;
}

std::vector<int> default_grid(int n_peers) {
  int m = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n_peers))));
  while (static_cast<std::int64_t>(m) * m < n_peers) ++m;  // guard against rounding
  while (m > 1 && static_cast<std::int64_t>(m - 1) * (m - 1) >= n_peers) --m;
  return {m, m};
}

std::int64_t grid_cells(std::span<const int> sides) {
  std::int64_t cells = 1;
  for (int s : sides) cells *= s;
  return cells;
}

void check_grid(std::span<const int> sides, int n_peers) {
  const std::int64_t cells = grid_cells(sides);
  if (cells < n_peers)
    throw ConfigError("--grid: " + grid_to_string(sides) + " has " + std::to_string(cells) +
                      (cells == 1 ? " cell" : " cells") + ", fewer than the " + std::to_string(n_peers) + " peers");
}

std::int64_t axis_stride(std::span<const int> sides, int axis) {
  std::int64_t stride = 1;
  for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < sides.size(); ++a) stride *= sides[a];
  return stride;
}

int cell_coordinate(std::span<const int> sides, std::int64_t cell, int axis) {
  return static_cast<int>((cell / axis_stride(sides, axis)) % sides[static_cast<std::size_t>(axis)]);
}

std::vector<std::int64_t> place_peers(std::uint64_t seed, std::span<const int> sides, int n, Placement placement) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  if (placement == Placement::rank) {
    std::iota(out.begin(), out.end(), std::int64_t{0});
    return out;
  }
  // Fisher-Yates from the back, stopped once the last n positions are final: n
  // draws whatever the grid's size.
  const std::int64_t cells = grid_cells(sides);
  std::vector<std::int64_t> cell(static_cast<std::size_t>(cells));
  std::iota(cell.begin(), cell.end(), std::int64_t{0});
  const Stream stream(seed, StreamId::placement);
  for (std::int64_t i = cells - 1; i >= cells - n && i >= 1; --i) {
    const auto j = static_cast<std::int64_t>(
        stream.below(static_cast<std::uint64_t>(i + 1), 0, static_cast<std::uint64_t>(i), 0));
    std::swap(cell[static_cast<std::size_t>(i)], cell[static_cast<std::size_t>(j)]);
  }
  for (int p = 0; p < n; ++p) out[static_cast<std::size_t>(p)] = cell[static_cast<std::size_t>(cells - 1 - p)];
  return out;
}

}  // namespace avb
