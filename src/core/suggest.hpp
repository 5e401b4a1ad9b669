// "Did you mean ...?" for a mistyped name (a flag, a protocol, an enum value): the
// accepted name nearest to what was typed, when it is near enough to be a typo.
#pragma once

#include <algorithm>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace avb {

// Edits between a and b: insertions, deletions, replacements and swaps of two
// neighbouring characters (the optimal string alignment distance; "mosphit" is one
// swap from "moshpit").
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  std::iota(d[0].begin(), d[0].end(), std::size_t{0});
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

// " (did you mean 'name'?)" for the accepted name nearest to `typed`, or "" when
// none is within a typo's reach: 1 edit for names of up to 4 characters, 2 up to
// 8, 3 beyond. Ties go to the first in `accepted`.
inline std::string did_you_mean(std::string_view typed, std::span<const std::string_view> accepted) {
  const std::size_t reach = typed.size() <= 4 ? 1 : typed.size() <= 8 ? 2 : 3;
  std::string_view best;
  std::size_t best_distance = reach + 1;
  for (std::string_view name : accepted) {
    const std::size_t distance = edit_distance(typed, name);
    if (distance > 0 && distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best.empty() ? std::string() : " (did you mean '" + std::string(best) + "'?)";
}

inline std::string did_you_mean(std::string_view typed, const std::vector<std::string>& accepted) {
  const std::vector<std::string_view> views(accepted.begin(), accepted.end());
  return did_you_mean(typed, std::span<const std::string_view>(views));
}

}  // namespace avb
