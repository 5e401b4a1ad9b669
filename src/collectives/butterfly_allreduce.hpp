// Butterfly all-reduce, the group all-reduce of Moshpit All-Reduce.
//
// The vector is cut into n parts and member j of the group reduces part j: every
// member sends part j to member j, member j averages what it received and sends the
// average back to every member. Each member sends 2(n-1) messages of S/n bytes, in
// two steps; since one member computes each part, all members end with identical
// bits. Empty parts (a vector shorter than the group) cost no message at all
// (under --model-dim: parts empty in the model; Comm::model_length).
//
// It also models a failure in the middle of the all-reduce (the `partial`
// semantics, as in hivemind since Dec 2021). A failed member delivers its first k
// parts, in the order j+1, j+2, ... (mod n), and then leaves:
//   - part p is the average over exactly the members that delivered it (the alive
//     ones always, the reducer's own values included);
//   - a failed member's own part is never returned, so every alive member keeps its
//     local values there;
//   - a failed member's vector stays as it was.
//
// Under a quantizer every part travels encoded (docs/protocols.md, "Quantizers"):
// a member sends Q(its copy of part p) to reducer p, which averages the decoded
// copies with its own exact one; the reducer encodes the average once and every
// alive member, the reducer included, takes the decoded average, so all hold
// identical bits. Failures and `partial` work as above.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <mpi.h>

#include "core/comm.hpp"
#include "codecs/compress.hpp"

namespace avb {

struct MemberFate {
  bool failed = false;
  int parts_delivered = 0;  // for a failed member: parts sent before it failed, 0..n-1
};
inline constexpr MemberFate kAlive{};

// Part p of a length-`length` vector cut into n parts: [begin, end).
struct Part {
  std::size_t begin, end;
  std::size_t size() const { return end - begin; }
};
Part butterfly_part(std::size_t length, int n, int p);
// f(k, butterfly_part(length, n, k).size()) for k = 0 .. n - 1, in that order,
// without a division each (a group's parts, charged every round): part k is
// q = length / n, plus 1 when (k + 1) r / n passes an integer, r = length % n.
template <class F>
void for_each_part_size(std::size_t length, int n, F&& f) {
  const auto un = static_cast<std::size_t>(n);
  const std::size_t q = length / un, r = length % un;
  std::size_t rem = 0;  // k r mod n
  for (int k = 0; k < n; ++k) {
    rem += r;
    const std::size_t extra = rem >= un ? 1 : 0;
    rem -= extra * un;
    f(k, q + extra);
  }
}

// Does `sender` deliver its copy of part `reducer` (both ranks of an n-member group)?
bool delivers(const MemberFate& sender_fate, int sender, int reducer, int n);

// What keys a quantized butterfly's encodings: the trial's seed, the round, and the
// members' peer ids in member order (the dither follows the peer, not its rank).
struct ButterflyCoding {
  const Quantizer* quantizer = nullptr;  // nullptr or kind none: the doubles themselves
  std::uint64_t seed = 0;
  std::uint64_t round = 0;
  std::span<const int> peers;
  bool quantized() const { return quantizer != nullptr && quantizer->spec().kind != QuantizerKind::none; }
};
// Member `position`'s encoding of its copy of part p, sent to reducer p (message
// 2p), and reducer p's encoding of the average (message 2p + 1).
EncodeContext scatter_context(const ButterflyCoding& coding, int position, int p);
EncodeContext gather_context(const ButterflyCoding& coding, int p);

class ButterflyAllreduce {
 public:
  // The mean over comm's ranks, in place; nobody fails.
  void average(Comm& comm, std::span<double> x) { average(comm, x, {}); }
  // With `fates` indexed by comm rank (empty: nobody fails). Every member must pass
  // the same fates. Collective over comm, failed members included: they still run
  // (the failure is simulated) and send what they delivered.
  void average(Comm& comm, std::span<double> x, std::span<const MemberFate> fates);
  // The same with every part encoded by coding.quantizer (unquantized: as above).
  void average(Comm& comm, std::span<double> x, std::span<const MemberFate> fates, const ButterflyCoding& coding);

 private:
  void coded_scatter(Comm& comm, std::span<double> x, std::span<const MemberFate> fates, const ButterflyCoding& coding);
  void coded_gather(Comm& comm, std::span<double> x, std::span<const MemberFate> fates, const ButterflyCoding& coding);

  std::vector<double> incoming_;  // one slot of part size per member, reused
  std::vector<const double*> inputs_;  // the contributors' copies of my part, in member order
  std::vector<MPI_Request> requests_;
  // Quantized: one encoding per destination part, what arrives, and their offsets.
  std::vector<std::vector<std::byte>> encoded_;
  std::vector<std::uint8_t> arrived_;
  std::vector<std::size_t> offsets_;
};

}  // namespace avb
