// Quantized all-reduces for protocol allreduce under --quantizer: the ring, doubling
// and tree of group_allreduce.hpp with every message carrying Q(values) instead of
// the doubles (docs/protocols.md, "Quantizers"). Where error enters:
//   ring:     each reduce-scatter hop sends Q(partial sum of a chunk) and the next
//             rank adds the decoded partial sum to its own exact values; the owner
//             of a finished chunk divides, encodes the mean once, takes the decoded
//             mean itself, and the all-gather forwards those bytes unchanged.
//   doubling: a fold-in sends Q(x); in each exchange both partners send Q(x) and
//             both take D(Q(own)) + D(Q(partner's)) (equal bits on both sides); a
//             fold-out sends Q(sum), which the sender takes decoded too; all divide.
//   tree:     children send Q(subtree sum); the root divides, encodes the mean once
//             and takes it decoded; the broadcast forwards those bytes unchanged.
// Every rank ends with identical bits. The ring sends one message per chunk (no
// segments), so a chunk has one encoding header. Empty chunks send nothing.
// The dither of rank r's j-th encoding is keyed (seed, round, peer of r, j).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <mpi.h>

#include "core/comm.hpp"
#include "codecs/compress.hpp"
#include "collectives/group_allreduce.hpp"

namespace avb {

// What keys the encodings of one all-reduce.
struct CodedRun {
  const Quantizer* quantizer = nullptr;
  std::uint64_t seed = 0;
  std::uint64_t round = 0;
  std::span<const int> peers;  // peer id of each rank; empty: rank r is peer r
  EncodeContext context(int rank, std::uint64_t message) const;
};

// `collective` is resolved like GroupAllreduce's (automatic: choose_collective by
// vector length, whatever the quantizer). Throws Error for a collective it lacks.
Collective coded_collective(Collective collective, int n, std::size_t length);

class CodedAllreduce {
 public:
  explicit CodedAllreduce(Collective collective) : collective_(collective) {}
  // The mean over comm's ranks, in place, identical bits on every rank.
  void average(Comm& comm, std::span<double> x, const CodedRun& run);

 private:
  void ring(Comm& comm, std::span<double> x, const CodedRun& run);
  void ring_gather(Comm& comm, std::span<double> x, const CodedRun& run);
  void doubling(Comm& comm, std::span<double> x, const CodedRun& run);
  void exchange(Comm& comm, std::span<double> x, int partner, std::uint64_t message, const CodedRun& run);
  void tree(Comm& comm, std::span<double> x, const CodedRun& run);

  Collective collective_;
  std::vector<std::byte> encoded_, arrived_;
  std::vector<double> incoming_;
};

// The same all-reduce on a whole group at once, for the sequential engine's
// population form: `rows` holds rank r's vector at [r * dim, (r + 1) * dim). Same encodings,
// same sums in the same order, so the same bits. Returns the bytes all ranks sent.
std::uint64_t coded_average_rows(std::span<double> rows, std::size_t dim, Collective collective, const CodedRun& run);

}  // namespace avb
