#include "protocols/ring_allreduce.hpp"

#include <cstdint>

namespace avb {

namespace {
constexpr int kRingTag = 101;

// Chunk c of a length-`length` vector cut into n parts: [begin, end).
struct Chunk {
  std::size_t begin, end;
  std::size_t size() const { return end - begin; }
};
Chunk chunk(std::size_t length, int n, int c) {
  const auto un = static_cast<std::size_t>(n);
  const auto uc = static_cast<std::size_t>(c);
  return {length * uc / un, length * (uc + 1) / un};
}
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

void RingAllreduce::sum(Comm& comm, std::span<double> x) { run(comm, x, false); }
void RingAllreduce::average(Comm& comm, std::span<double> x) { run(comm, x, true); }

void RingAllreduce::run(Comm& comm, std::span<double> x, bool divide) {
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) return;  // the sum and the mean of one vector are the vector
  const std::size_t length = x.size();
  incoming_.resize(length / static_cast<std::size_t>(n) + 1);
  const int right = mod(r + 1, n);
  const int left = mod(r - 1, n);

  // Reduce-scatter: in step s, pass chunk r-s to the right and add chunk r-s-1
  // from the left. After n-1 steps this rank holds the full sum of chunk r+1.
  for (int s = 0; s < n - 1; ++s) {
    const Chunk out = chunk(length, n, mod(r - s, n));
    const Chunk in = chunk(length, n, mod(r - s - 1, n));
    comm.sendrecv<double>(x.subspan(out.begin, out.size()), right,
                          std::span<double>(incoming_.data(), in.size()), left, kRingTag);
    double* dst = x.data() + in.begin;
    for (std::size_t k = 0; k < in.size(); ++k) dst[k] += incoming_[k];
  }
  if (divide) {
    const Chunk own = chunk(length, n, mod(r + 1, n));
    // Divide rather than multiply by 1/n: x/n is the correctly rounded mean of the
    // sum, which multiplying by a rounded 1/n is not.
    for (std::size_t k = own.begin; k < own.end; ++k) x[k] /= static_cast<double>(n);
  }
  // All-gather: in step s, pass the finished chunk r+1-s to the right and receive
  // the finished chunk r-s from the left, in place.
  for (int s = 0; s < n - 1; ++s) {
    const Chunk out = chunk(length, n, mod(r + 1 - s, n));
    const Chunk in = chunk(length, n, mod(r - s, n));
    comm.sendrecv<double>(x.subspan(out.begin, out.size()), right, x.subspan(in.begin, in.size()), left,
                          kRingTag);
  }
}

}  // namespace avb
