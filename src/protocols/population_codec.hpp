// What the sequential forms of the quantized graph protocols (gossip, pairwise)
// share: a value as its receiver decodes it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "codecs/compress.hpp"
#include "protocols/population.hpp"

namespace avb {

// What receiver i uses for sender j's value in round t when values travel
// quantized (docs/protocols.md, "Quantized gossip and pairwise"): Q(x_j), encoded
// with dither key (seed, t, j, message 0), decoded near i's own value `own`. When
// it does not decode the failure counts, and then: lattice, i's one-byte verdict
// goes back to j and j sends x_j itself; the other kinds, i's own value. The
// verdict byte is counted for every lattice message. Returns whether the message
// decoded; `out` holds the value used.
class ReceivedValue {
 public:
  explicit ReceivedValue(const QuantizerSpec& spec) : quantizer_(spec) {}
  bool receive(std::uint64_t seed, int t, int j, std::span<const double> xj, std::span<const double> own,
               std::span<double> out, RoundEffect& effect);
  const Quantizer& quantizer() const { return quantizer_; }

 private:
  Quantizer quantizer_;
  std::vector<std::byte> bytes_;
};

}  // namespace avb
