// The lattice quantizer.
//
// Encoding: k = round(x/eps) (half away from zero), v = k mod q in [0, q).
// Decoding with the receiver's reference b: the k' = v (mod q) nearest to b/eps,
// x' = eps * k'. x' = eps * k exactly when k' = k, and then |x' - x| <= eps/2.
//
// When does the decoder get k? Exactly when |eps*k - b| < q*eps/2 (at equality
// the candidates on both sides tie), so |x - b| < (q-1)*eps/2 always decodes and
// |x - b| > (q+1)*eps/2 never does; in between it depends on where x falls in its
// cell. (The familiar "correct iff |x - b| < q*eps/2" is this up to eps/2: the
// decodable set is a union of whole cells, the q cells nearest b, which an
// interval centred on b cannot be in general.)
//
// What can the decoder detect? From v and b alone, nothing: every v is the code
// of some point within q*eps/2 of b, so a wrapped coordinate looks like a valid
// one. Detection therefore needs information from the sender, who alone knows x.
// We send a 64-bit checksum of the lattice indices k (9 bytes per message with a
// status byte, counted on the wire) and the decoder compares it with the
// checksum of the k' it reconstructed:
//   - no false alarms: if every coordinate decodes correctly, k' = k and the
//     checksums are equal;
//   - a wrong coordinate is always caught when it is the only wrong one: the
//     checksum is sum_i mix_i(k_i) mod 2^64 with each mix_i a bijection of the
//     64-bit words, so changing one k_i changes the sum;
//   - several wrong coordinates escape only if their changes cancel modulo 2^64,
//     which for a mixing function is a chance of about 2^-64 per message.
// The result is per message (which coordinates failed is unknown), which is what
// a protocol needs to decide whether to use what it received, and what the trace
// counts. A protocol that wants finer granularity encodes buckets as messages.
// The status byte says that the sender could not encode at all: a non-finite x,
// or |x/eps| > 2^52 where k no longer fits the exactly representable integers.
#include "codecs/lattice.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "codecs/codec_bits.hpp"

namespace avb::codec {

namespace {

constexpr std::size_t kLatticeHeader = 9;  // status byte + 64-bit checksum
constexpr double kLatticeLimit = 0x1.0p52;

// MurmurHash3's 64-bit finaliser: a bijection of the 64-bit words.
std::uint64_t fmix64(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb93fe53e4cd9ull;
  h ^= h >> 33;
  return h;
}

// mix_i(k) = fmix64(k xor key_i): a bijection in k for each position i.
std::uint64_t mix(std::size_t i, std::int64_t k) {
  const std::uint64_t key = fmix64(static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
  return fmix64(static_cast<std::uint64_t>(k) ^ key);
}

int lattice_bits(std::uint32_t q) { return std::bit_width(q - 1); }

// std::round (half away from zero) as an integer, for |v| < 2^63: truncate, then
// step away from zero when the dropped fraction (exact: v - trunc(v)) is >= 1/2.
// The same result as std::round without the libm call in the codec loops.
std::int64_t round_half_away(double v) {
  auto t = static_cast<std::int64_t>(v);
  const double fraction = v - static_cast<double>(t);
  if (fraction >= 0.5) ++t;
  else if (fraction <= -0.5) --t;
  return t;
}

std::uint64_t mod_q(std::int64_t k, std::uint32_t q) {
  const std::int64_t r = k % static_cast<std::int64_t>(q);
  return static_cast<std::uint64_t>(r < 0 ? r + q : r);
}

}  // namespace

std::size_t lattice_bytes(std::uint32_t q, std::size_t d) {
  return kLatticeHeader + packed_bytes(static_cast<std::size_t>(lattice_bits(q)), d);
}

void encode_lattice(std::span<const double> x, const QuantizerSpec& spec, std::vector<std::byte>& out) {
  const std::size_t d = x.size();
  std::byte* p = out.data();
  const double eps = spec.lattice_eps;
  const std::uint32_t q = spec.lattice_q;
  const int width = lattice_bits(q);
  BitWriter bits(p + kLatticeHeader);
  std::uint64_t checksum = 0;
  for (std::size_t k = 0; k < d; ++k) {
    // |round(v)| <= 2^52 exactly when |v| <= 2^52 (beyond, doubles are integers).
    const double v = x[k] / eps;
    if (!(std::fabs(v) <= kLatticeLimit)) {  // also NaN
      std::fill(out.begin(), out.end(), std::byte{0});
      p[0] = std::byte{1};  // status: not encodable
      return;
    }
    const std::int64_t index = round_half_away(v);
    checksum += mix(k, index);
    bits.put(mod_q(index, q), width);
  }
  bits.flush();
  p[0] = std::byte{0};
  put_u64(p + 1, checksum);
}

DecodeResult decode_lattice(const std::byte* p, std::span<const double> reference, std::span<double> out,
                            const QuantizerSpec& spec) {
  const std::size_t d = out.size();
  if (reference.size() != d)
    throw Error("Quantizer lattice: a reference of " + std::to_string(reference.size()) + " values for " +
                std::to_string(d) + " values");
  const double eps = spec.lattice_eps;
  const std::uint32_t q = spec.lattice_q;
  const double qd = static_cast<double>(q);
  // For q a power of two (the default), * (1/q) is exactly / q.
  const double q_reciprocal = std::has_single_bit(q) ? 1.0 / qd : 0.0;
  const int width = lattice_bits(q);
  const bool encodable = p[0] == std::byte{0};
  BitReader bits(p + kLatticeHeader);
  std::uint64_t checksum = 0;
  for (std::size_t k = 0; k < d; ++k) {
    const auto v = static_cast<std::int64_t>(bits.get(width));
    // k' = v + q*m nearest to b/eps. A reference too far out for exact integer
    // arithmetic cannot be near a valid index (|k| <= 2^52): any k' will do,
    // the checksum rejects it.
    const double beta = reference[k] / eps;
    const double offset = q_reciprocal != 0.0 ? (beta - static_cast<double>(v)) * q_reciprocal
                                              : (beta - static_cast<double>(v)) / qd;
    const std::int64_t m = std::fabs(beta) <= 0x1.0p54 ? round_half_away(offset) : 0;
    const std::int64_t index = v + static_cast<std::int64_t>(q) * m;
    checksum += mix(k, index);
    out[k] = eps * static_cast<double>(index);
  }
  return DecodeResult{encodable && checksum == get_u64(p + 1)};
}

}  // namespace avb::codec
