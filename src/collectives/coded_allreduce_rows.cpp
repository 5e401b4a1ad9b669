// The quantized all-reduces on a whole group at once (coded_allreduce.hpp): what
// each rank of CodedAllreduce computes, rank by rank, in the same order.
#include <algorithm>

#include "core/reduce.hpp"
#include "collectives/butterfly_allreduce.hpp"
#include "collectives/coded_allreduce.hpp"
#include "collectives/doubling_allreduce.hpp"

namespace avb {

namespace {

// Rows of one group and the quantizer's round trip on them.
struct Rows {
  std::span<double> values;
  std::size_t dim;
  const CodedRun& run;
  std::vector<std::byte> bytes;
  std::uint64_t sent = 0;  // bytes all ranks sent

  std::span<double> row(int r) { return values.subspan(static_cast<std::size_t>(r) * dim, dim); }
  // What rank `sender`'s encoding of `v` (its message `message`) decodes to, in `out`.
  void through_wire(std::span<const double> v, int sender, std::uint64_t message, std::span<double> out) {
    run.quantizer->encode(v, run.context(sender, message), bytes);
    run.quantizer->decode(bytes, {}, out);
  }
};

// Chunk c travels from rank c round the ring: rank c + s + 1 adds the decoded
// partial sum to its own values; rank c - 1 divides, and everyone takes its decoded
// mean. Each non-empty chunk costs 2(n - 1) messages.
void ring_rows(Rows& rows, int n) {
  std::vector<double> sum, decoded;
  for (int c = 0; c < n; ++c) {
    const Part part = butterfly_part(rows.dim, n, c);
    if (part.size() == 0) continue;
    const auto own = rows.row(c).subspan(part.begin, part.size());
    sum.assign(own.begin(), own.end());
    decoded.resize(part.size());
    for (int s = 0; s < n - 1; ++s) {
      rows.through_wire(sum, (c + s) % n, static_cast<std::uint64_t>(s), decoded);
      const auto mine = rows.row((c + s + 1) % n).subspan(part.begin, part.size());
      for (std::size_t k = 0; k < part.size(); ++k) sum[k] = mine[k] + decoded[k];
    }
    divide_by(sum, static_cast<double>(n));
    rows.through_wire(sum, (c + n - 1) % n, static_cast<std::uint64_t>(n - 1), sum);
    for (int r = 0; r < n; ++r) std::copy(sum.begin(), sum.end(), rows.row(r).begin() + static_cast<std::ptrdiff_t>(part.begin));
    rows.sent += 2ull * static_cast<std::uint64_t>(n - 1) * rows.run.quantizer->encoded_bytes(part.size());
  }
}

void doubling_rows(Rows& rows, int n) {
  const int p2 = floor_power_of_two(n), extra = n - p2;
  const std::uint64_t message_bytes = rows.run.quantizer->encoded_bytes(rows.dim);
  std::vector<double> decoded(rows.dim);
  for (int r = 1; r < 2 * extra; r += 2) {  // fold-in
    rows.through_wire(rows.row(r - 1), r - 1, 0, decoded);
    add_into(rows.row(r), decoded);
  }
  auto real_rank = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  // Each exchange: every active rank's D(Q(x)) first, then the pairwise sums.
  std::vector<double> wire(static_cast<std::size_t>(p2) * rows.dim);
  std::uint64_t message = 1;
  for (int mask = 1; mask < p2; mask <<= 1, ++message) {
    for (int v = 0; v < p2; ++v)
      rows.through_wire(rows.row(real_rank(v)), real_rank(v), message,
                        std::span<double>(wire).subspan(static_cast<std::size_t>(v) * rows.dim, rows.dim));
    for (int v = 0; v < p2; ++v) {
      const auto mine = rows.row(real_rank(v));
      const double* a = wire.data() + static_cast<std::size_t>(v) * rows.dim;
      const double* b = wire.data() + static_cast<std::size_t>(v ^ mask) * rows.dim;
      for (std::size_t k = 0; k < rows.dim; ++k) mine[k] = a[k] + b[k];
    }
  }
  for (int r = 1; r < 2 * extra; r += 2) {  // fold-out, message steps + 1
    rows.through_wire(rows.row(r), r, message, rows.row(r));
    std::copy(rows.row(r).begin(), rows.row(r).end(), rows.row(r - 1).begin());
  }
  for (int r = 0; r < n; ++r) divide_by(rows.row(r), static_cast<double>(n));
  int steps = 0;
  while ((1 << steps) < p2) ++steps;
  rows.sent += (2ull * static_cast<std::uint64_t>(extra) + static_cast<std::uint64_t>(p2) * static_cast<std::uint64_t>(steps)) *
               message_bytes;
}

// Rank r adds its children r + 1, r + 2, r + 4, ... (each with its subtree summed)
// by increasing distance; the root divides and everyone takes its decoded mean.
void tree_rows(Rows& rows, int n) {
  std::vector<double> decoded(rows.dim);
  for (int mask = 1; mask < n; mask <<= 1)
    for (int r = 0; r + mask < n; r += 2 * mask) {
      rows.through_wire(rows.row(r + mask), r + mask, 0, decoded);
      add_into(rows.row(r), decoded);
    }
  divide_by(rows.row(0), static_cast<double>(n));
  rows.through_wire(rows.row(0), 0, 1, rows.row(0));
  for (int r = 1; r < n; ++r) std::copy(rows.row(0).begin(), rows.row(0).end(), rows.row(r).begin());
  rows.sent += 2ull * static_cast<std::uint64_t>(n - 1) * rows.run.quantizer->encoded_bytes(rows.dim);
}

}  // namespace

std::uint64_t coded_average_rows(std::span<double> values, std::size_t dim, Collective collective,
                                 const CodedRun& run) {
  const int n = static_cast<int>(dim == 0 ? 0 : values.size() / dim);
  if (n < 2) return 0;
  Rows rows{values, dim, run, {}, 0};
  const Collective c = coded_collective(collective, n, dim);
  if (c == Collective::ring) ring_rows(rows, n);
  else if (c == Collective::doubling) doubling_rows(rows, n);
  else tree_rows(rows, n);
  return rows.sent;
}

}  // namespace avb
