#include "protocols/population_codec.hpp"

#include <algorithm>

namespace avb {

bool ReceivedValue::receive(std::uint64_t seed, int t, int j, std::span<const double> xj, std::span<const double> own,
                            std::span<double> out, RoundEffect& effect) {
  quantizer_.encode(xj, EncodeContext{seed, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(j), 0}, bytes_);
  const bool lattice = quantizer_.spec().kind == QuantizerKind::lattice;
  if (lattice) effect.bytes += 1;
  if (quantizer_.decode(bytes_, own, out).ok) return true;
  ++effect.decode_failures;
  if (lattice) {
    effect.bytes += 8 * xj.size();
    std::copy(xj.begin(), xj.end(), out.begin());
  } else {
    std::copy(own.begin(), own.end(), out.begin());
  }
  return false;
}

}  // namespace avb
