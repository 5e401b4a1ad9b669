#include "protocols/group_allreduce.hpp"

#include <string>

#include "core/error.hpp"
#include "core/reduce.hpp"

namespace avb {

Collective parse_collective(std::string_view name) { return kCollectiveNames.parse(name); }

std::string_view to_string(Collective c) { return kCollectiveNames.name(c); }

namespace {
int log2_exact(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}
}  // namespace

Collective choose_collective(int n, std::size_t length) {
  if (n <= 2) return Collective::doubling;  // one exchange either way
  constexpr double kLatencyBytes = 8192.0;
  const double bytes = 8.0 * static_cast<double>(length);
  const int p2 = floor_power_of_two(n);
  const double doubling_steps = log2_exact(p2) + (p2 == n ? 0 : 2);
  const double ring_cost = 2.0 * (n - 1) * (kLatencyBytes + bytes / n);
  const double doubling_cost = doubling_steps * (kLatencyBytes + bytes);
  return ring_cost < doubling_cost ? Collective::ring : Collective::doubling;
}

std::uint64_t collective_bytes(Collective c, int n, std::size_t length) {
  if (n < 2) return 0;
  if (c == Collective::automatic) c = choose_collective(n, length);
  const std::uint64_t vector = 8ull * length;
  if (c == Collective::ring || c == Collective::tree) return 2ull * static_cast<std::uint64_t>(n - 1) * vector;
  const int p2 = floor_power_of_two(n);
  const std::uint64_t extra = static_cast<std::uint64_t>(n - p2);
  return (2 * extra + static_cast<std::uint64_t>(p2) * static_cast<std::uint64_t>(log2_exact(p2))) * vector;
}

void GroupAllreduce::average(Comm& comm, std::span<double> x) {
  // Chosen for the length the messages stand for (--model-dim), as the model would.
  const Collective c =
      choice_ == Collective::automatic ? choose_collective(comm.size(), comm.model_length(x.size())) : choice_;
  if (c == Collective::ring) ring_.average(comm, x);
  else if (c == Collective::doubling) doubling_.average(comm, x);
  else tree_average(comm, x);
}

void GroupAllreduce::tree_average(Comm& comm, std::span<double> x) {
  constexpr int kTreeTag = 103;
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) return;
  incoming_.resize(x.size());
  std::span<double> in(incoming_.data(), x.size());
  // Reduce: rank r adds the partial sums of r+1, r+2, r+4, ... (below its lowest
  // set bit) and passes the result to r - lowbit(r); the order depends on n alone.
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (r & mask) {
      comm.ssend<double>(x, r - mask, kTreeTag);
      break;
    }
    if (r + mask < n) {
      comm.recv<double>(in, r + mask, kTreeTag);
      add_into(x, in);
    }
  }
  if (r == 0)
    for (double& v : x) v /= static_cast<double>(n);
  // Broadcast down the same tree: receive from the parent, then serve the
  // children from the highest subtree down.
  if (r != 0) comm.recv<double>(x, r - mask, kTreeTag);
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (r + mask < n) comm.ssend<double>(x, r + mask, kTreeTag);
}

}  // namespace avb
