// The quantized all-reduces over MPI (coded_allreduce.hpp).
#include "collectives/coded_allreduce.hpp"

#include <string>

#include "core/error.hpp"
#include "core/reduce.hpp"
#include "collectives/butterfly_allreduce.hpp"
#include "collectives/doubling_allreduce.hpp"
#include "codecs/wire.hpp"

namespace avb {

namespace {
// Tags of their own, so a quantized message can never match a plain receive.
constexpr int kCodedRingTag = 121;
constexpr int kCodedDoublingTag = 122;
constexpr int kCodedTreeTag = 123;

int wrap(int a, int n) { return ((a % n) + n) % n; }

// The ring's chunk c (any integer, taken mod n): the butterfly's cut.
Part ring_part(std::size_t length, int n, int c) { return butterfly_part(length, n, wrap(c, n)); }

std::span<std::uint8_t> receivable(std::vector<std::byte>& bytes, std::size_t size) {
  bytes.resize(size);
  return {reinterpret_cast<std::uint8_t*>(bytes.data()), size};
}
}  // namespace

EncodeContext CodedRun::context(int rank, std::uint64_t message) const {
  const auto peer = peers.empty() ? rank : peers[static_cast<std::size_t>(rank)];
  return {seed, round, static_cast<std::uint64_t>(peer), message};
}

Collective coded_collective(Collective collective, int n, std::size_t length) {
  const Collective c = collective == Collective::automatic ? choose_collective(n, length) : collective;
  if (c != Collective::ring && c != Collective::doubling && c != Collective::tree)
    throw Error("quantized all-reduce: no quantized form of --collective " + std::string(to_string(c)));
  return c;
}

void CodedAllreduce::average(Comm& comm, std::span<double> x, const CodedRun& run) {
  if (comm.size() == 1) return;
  const Collective c = coded_collective(collective_, comm.size(), x.size());
  if (c == Collective::ring) ring(comm, x, run);
  else if (c == Collective::doubling) doubling(comm, x, run);
  else tree(comm, x, run);
}

// Reduce-scatter: at stage s rank r sends Q(its partial sum of chunk r - s) to the
// right and adds the decoded partial sum of chunk r - s - 1 from the left to its own.
void CodedAllreduce::ring(Comm& comm, std::span<double> x, const CodedRun& run) {
  const int n = comm.size(), r = comm.rank();
  const Quantizer& q = *run.quantizer;
  std::vector<MPI_Request> requests;
  for (int s = 0; s < n - 1; ++s) {
    const Part out = ring_part(x.size(), n, r - s), in = ring_part(x.size(), n, r - s - 1);
    if (in.size() > 0)
      comm.irecv<std::uint8_t>(receivable(arrived_, q.encoded_bytes(in.size())), wrap(r - 1, n), kCodedRingTag,
                               requests);
    if (out.size() > 0) {
      q.encode(x.subspan(out.begin, out.size()), run.context(r, static_cast<std::uint64_t>(s)), encoded_);
      comm.isend<std::uint8_t>(wire(encoded_), wrap(r + 1, n), kCodedRingTag, requests);
    }
    comm.wait_all(requests, "quantized ring all-reduce");
    if (in.size() == 0) continue;
    incoming_.resize(in.size());
    q.decode(arrived_, {}, incoming_);
    const std::span<double> mine = x.subspan(in.begin, in.size());
    add_into(mine, incoming_);
    if (s == n - 2) divide_by(mine, static_cast<double>(n));
  }
  ring_gather(comm, x, run);
}

// All-gather: the owner of chunk r + 1 encodes its mean once and takes it decoded;
// at stage j rank r forwards the bytes of chunk r + 1 - j and decodes chunk r - j.
void CodedAllreduce::ring_gather(Comm& comm, std::span<double> x, const CodedRun& run) {
  const int n = comm.size(), r = comm.rank();
  const Quantizer& q = *run.quantizer;
  const Part own = ring_part(x.size(), n, r + 1);
  if (own.size() > 0) {
    q.encode(x.subspan(own.begin, own.size()), run.context(r, static_cast<std::uint64_t>(n - 1)), encoded_);
    q.decode(encoded_, {}, x.subspan(own.begin, own.size()));
  }
  std::vector<MPI_Request> requests;
  for (int j = 0; j < n - 1; ++j) {
    const Part out = ring_part(x.size(), n, r + 1 - j), in = ring_part(x.size(), n, r - j);
    if (in.size() > 0)
      comm.irecv<std::uint8_t>(receivable(arrived_, q.encoded_bytes(in.size())), wrap(r - 1, n), kCodedRingTag,
                               requests);
    if (out.size() > 0) comm.isend<std::uint8_t>(wire(encoded_), wrap(r + 1, n), kCodedRingTag, requests);
    comm.wait_all(requests, "quantized ring all-reduce");
    if (in.size() == 0) continue;
    q.decode(arrived_, {}, x.subspan(in.begin, in.size()));
    std::swap(encoded_, arrived_);  // what arrived is what goes on at the next stage
  }
}

void CodedAllreduce::doubling(Comm& comm, std::span<double> x, const CodedRun& run) {
  const int n = comm.size(), r = comm.rank();
  const Quantizer& q = *run.quantizer;
  const int p2 = floor_power_of_two(n), extra = n - p2;
  const std::size_t bytes = q.encoded_bytes(x.size());
  incoming_.resize(x.size());
  int virtual_rank = r - extra;
  if (r < 2 * extra) {  // fold-in: even ranks hand Q(x) to the odd rank above
    virtual_rank = r % 2 == 1 ? r / 2 : -1;
    if (r % 2 == 0) {
      q.encode(x, run.context(r, 0), encoded_);
      comm.send<std::uint8_t>(wire(encoded_), r + 1, kCodedDoublingTag);
    } else {
      comm.recv<std::uint8_t>(receivable(arrived_, bytes), r - 1, kCodedDoublingTag);
      q.decode(arrived_, {}, incoming_);
      add_into(x, incoming_);
    }
  }
  auto real_rank = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  std::uint64_t message = 1;
  if (virtual_rank >= 0)
    for (int mask = 1; mask < p2; mask <<= 1, ++message) exchange(comm, x, real_rank(virtual_rank ^ mask), message, run);
  int steps = 0;
  while ((1 << steps) < p2) ++steps;
  if (r < 2 * extra) {  // fold-out: the odd rank returns Q(sum) and takes it decoded
    if (r % 2 == 1) {
      q.encode(x, run.context(r, static_cast<std::uint64_t>(steps) + 1), encoded_);
      q.decode(encoded_, {}, x);
      comm.send<std::uint8_t>(wire(encoded_), r - 1, kCodedDoublingTag);
    } else {
      comm.recv<std::uint8_t>(receivable(arrived_, bytes), r + 1, kCodedDoublingTag);
      q.decode(arrived_, {}, x);
    }
  }
  divide_by(x, static_cast<double>(n));
}

// Both partners send Q(x) and both end with D(Q(own)) + D(Q(partner's)).
void CodedAllreduce::exchange(Comm& comm, std::span<double> x, int partner, std::uint64_t message,
                              const CodedRun& run) {
  const Quantizer& q = *run.quantizer;
  q.encode(x, run.context(comm.rank(), message), encoded_);
  comm.sendrecv<std::uint8_t>(wire(encoded_), partner, receivable(arrived_, encoded_.size()), partner,
                              kCodedDoublingTag);
  q.decode(encoded_, {}, x);
  q.decode(arrived_, {}, incoming_);
  add_into(x, incoming_);
}

void CodedAllreduce::tree(Comm& comm, std::span<double> x, const CodedRun& run) {
  const int n = comm.size(), r = comm.rank();
  const Quantizer& q = *run.quantizer;
  const std::size_t bytes = q.encoded_bytes(x.size());
  incoming_.resize(x.size());
  int mask = 1;
  for (; mask < n; mask <<= 1) {  // reduce: children's Q(subtree sum), lowest first
    if (r & mask) {
      q.encode(x, run.context(r, 0), encoded_);
      comm.ssend<std::uint8_t>(wire(encoded_), r - mask, kCodedTreeTag);
      break;
    }
    if (r + mask < n) {
      comm.recv<std::uint8_t>(receivable(arrived_, bytes), r + mask, kCodedTreeTag);
      q.decode(arrived_, {}, incoming_);
      add_into(x, incoming_);
    }
  }
  if (r == 0) {
    divide_by(x, static_cast<double>(n));
    q.encode(x, run.context(0, 1), encoded_);
  } else {
    comm.recv<std::uint8_t>(receivable(encoded_, bytes), r - mask, kCodedTreeTag);
  }
  q.decode(encoded_, {}, x);
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (r + mask < n) comm.ssend<std::uint8_t>(wire(encoded_), r + mask, kCodedTreeTag);
}

}  // namespace avb
