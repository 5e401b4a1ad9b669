#include "collectives/doubling_allreduce.hpp"

#include "core/reduce.hpp"

namespace avb {

namespace {
constexpr int kDoublingTag = 102;
}

void DoublingAllreduce::sum(Comm& comm, std::span<double> x) { run(comm, x); }

void DoublingAllreduce::average(Comm& comm, std::span<double> x) {
  run(comm, x);
  const double n = static_cast<double>(comm.size());
  for (double& v : x) v /= n;
}

void DoublingAllreduce::run(Comm& comm, std::span<double> x) {
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) return;
  incoming_.resize(x.size());
  std::span<double> in(incoming_.data(), x.size());
  const int p2 = floor_power_of_two(n);
  const int extra = n - p2;

  // Fold-in: among the first 2*extra ranks, each even rank hands its vector to the
  // odd rank above it and waits; p2 ranks remain.
  int virtual_rank = -1;
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      comm.send<double>(x, r + 1, kDoublingTag);
    } else {
      comm.recv<double>(in, r - 1, kDoublingTag);
      add_into(x, in);
      virtual_rank = r / 2;
    }
  } else {
    virtual_rank = r - extra;
  }
  auto real_rank = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };

  if (virtual_rank >= 0) {
    for (int mask = 1; mask < p2; mask <<= 1) {
      const int partner = real_rank(virtual_rank ^ mask);
      comm.sendrecv<double>(x, partner, in, partner, kDoublingTag);
      add_into(x, in);
    }
  }

  // Fold-out: the odd ranks return the result to the even ranks that sat out.
  if (r < 2 * extra) {
    if (r % 2 == 1) comm.send<double>(x, r - 1, kDoublingTag);
    else comm.recv<double>(x, r + 1, kDoublingTag);
  }
}

}  // namespace avb
