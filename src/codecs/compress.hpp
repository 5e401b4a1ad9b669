// Quantizers: lossy encodings of a vector for the wire, shared by the protocols
// that exchange vectors (swarm, pairwise, gossip). A protocol encodes what it
// sends, sends the bytes through its Comm (so the encoded size is what the trace
// counts) and decodes what it receives. Formats, bounds and sizes:
// docs/protocols.md, "Quantizers".
//
// Encoding is a pure function of (spec, x, context): the stochastic quantizer's
// dither comes from the keyed `dither` stream, never from a sequential generator,
// so the same bytes come out on any engine, rank count or call order.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/settings.hpp"

namespace avb {

enum class QuantizerKind {
  none,        // the doubles themselves, 8 bytes per coordinate
  fp16,        // IEEE binary16, round to nearest even, saturating
  uniform8,    // 256 buckets over [mean - 6 sigma, mean + 6 sigma]
  stochastic,  // 2^B levels over [min, max], unbiased dithered rounding
  lattice,     // round(x/eps) mod q, decoded near the receiver's reference
};

// Defaults of --lattice-q and --lattice-eps: 16 bits per coordinate as in the
// SwarmSGD authors' code, and eps = 2^-11, which decodes within q*eps/2 = 16 of the
// reference: two N(0, 1) values differ by more than that with probability below
// 1e-28, so N(0, 1) data decodes at any N and dim (docs/protocols.md,
// "Quantizers"). A power of two keeps x/eps and eps*k exact.
inline constexpr std::uint32_t kDefaultLatticeQ = 65536;
inline constexpr double kDefaultLatticeEps = 0x1.0p-11;

// The --quantizer values that need no reference at the receiver (all but lattice).
inline constexpr std::string_view kReferenceFreeQuantizers = "none, fp16, uniform8, stochastic:B (B in 1..16)";

struct QuantizerSpec {
  QuantizerKind kind = QuantizerKind::none;
  int bits = 0;                                 // stochastic: B in 1..16
  std::uint32_t lattice_q = kDefaultLatticeQ;   // lattice: q >= 2
  double lattice_eps = kDefaultLatticeEps;      // lattice: eps > 0, finite
};

// --quantizer {none, fp16, uniform8, stochastic:B, lattice} with --lattice-q and
// --lattice-eps (checked whatever the kind: 2 <= q <= 2^32 - 1, eps finite > 0).
// Throws ConfigError naming the flag.
QuantizerSpec parse_quantizer(std::string_view text, std::int64_t lattice_q = kDefaultLatticeQ,
                              double lattice_eps = kDefaultLatticeEps);
// The same range checks on a spec built in code; throws ConfigError.
void validate(const QuantizerSpec& spec);
// The --quantizer value ("stochastic:4"); parse_quantizer(to_string(s)) gives s's kind and bits.
std::string to_string(const QuantizerSpec& spec);

// The quantizer's settings' declarations (core/settings.hpp's visitor), which the
// protocols' table visits and the catalog rows of the protocols that send Q(x)
// take: a new quantizer setting is a field and a line here. --quantizer sets the
// kind (and bits) only; the lattice's own fields have flags of their own.
inline constexpr TextCodec<QuantizerSpec> kQuantizerText{
    [] { return std::string("{none,fp16,uniform8,stochastic:B,lattice}"); },
    [](std::string_view text, QuantizerSpec& field) {
      const QuantizerSpec parsed = parse_quantizer(text);
      field.kind = parsed.kind;
      field.bits = parsed.bits;
    },
    [](const QuantizerSpec& field) { return to_string(field); }};
// The lattice's own settings (protocols without a lattice take none of these).
template <class Q, class Visitor>
  requires std::same_as<std::remove_const_t<Q>, QuantizerSpec>
void for_each_lattice_setting(Q& q, Visitor&& v) {
  const bool lattice = q.kind == QuantizerKind::lattice;
  v.integer("--lattice-q", q.lattice_q, IntRange{2, 4294967295LL}, "--quantizer lattice: q, an integer in [2, 4294967295]",
            lattice);
  v.real("--lattice-eps", q.lattice_eps, above(0), "--quantizer lattice: epsilon, a number > 0", lattice);
}
template <class Q, class Visitor>
  requires std::same_as<std::remove_const_t<Q>, QuantizerSpec>
void for_each_setting(Q& q, Visitor&& v) {
  v.custom("--quantizer", q, kQuantizerText, "what travels on the wire; stochastic:B has B bits, 1..16", true);
  for_each_lattice_setting(q, v);
}

// Where an encoding happens, for the dither counter: coordinate k of a message
// uses word k mod 4 of Philox block (round, peer, k / 4, message) of
// Stream(seed, StreamId::dither). Two encodings with equal contexts use the same
// dither, so callers that encode several vectors per peer and round number them
// with `message` (e.g. one per interaction).
struct EncodeContext {
  std::uint64_t seed = 0;     // the trial's seed
  std::uint64_t round = 0;    // round, or interaction id
  std::uint64_t peer = 0;     // the encoding peer
  std::uint64_t message = 0;  // distinguishes encodings by one peer in one round
};

struct DecodeResult {
  // false: `out` is known not to approximate the sent vector within the
  // quantizer's bound. Lattice: some coordinate decoded to the wrong lattice
  // point (checksum mismatch) or the sender could not encode (non-finite value,
  // |x/eps| > 2^52). uniform8, stochastic: the sender's range was not finite
  // (a non-finite value, or a range that overflows); `out` is then all NaN.
  bool ok = true;
};

class Quantizer {
 public:
  explicit Quantizer(const QuantizerSpec& spec);  // validate(spec)

  const QuantizerSpec& spec() const { return spec_; }

  // Bytes of the encoding of a d-vector, header included; the same for every x.
  std::size_t encoded_bytes(std::size_t d) const {
    return spec_.kind == QuantizerKind::none ? 8 * d : coded_bytes(d);
  }

  // Replaces `out` with the encoding of x (out.size() == encoded_bytes(x.size())).
  // none is done here, inline: an exchange of swarm encodes a few doubles at a
  // time, and the calls cost more than the copy.
  void encode(std::span<const double> x, const EncodeContext& context, std::vector<std::byte>& out) const {
    if (spec_.kind != QuantizerKind::none || std::endian::native != std::endian::little)
      return encode_coded(x, context, out);
    if (out.size() != 8 * x.size()) out.resize(8 * x.size());
    copy_doubles(out.data(), x.data(), x.size());
  }

  // Decodes `in` into out (d = out.size(), in.size() must be encoded_bytes(d)).
  // `reference` is the receiver's own vector b (size d): lattice decodes each
  // coordinate to the lattice point nearest to it; other kinds ignore it (may be
  // empty). `out` may be `reference` itself (decoding in place). Throws Error
  // on a size mismatch.
  DecodeResult decode(std::span<const std::byte> in, std::span<const double> reference, std::span<double> out) const {
    if (spec_.kind != QuantizerKind::none || std::endian::native != std::endian::little || in.size() != 8 * out.size())
      return decode_coded(in, reference, out);
    copy_doubles(out.data(), in.data(), out.size());
    return {};
  }

 private:
  std::size_t coded_bytes(std::size_t d) const;
  void encode_coded(std::span<const double> x, const EncodeContext& context, std::vector<std::byte>& out) const;
  DecodeResult decode_coded(std::span<const std::byte> in, std::span<const double> reference,
                            std::span<double> out) const;
  // d doubles' bytes (one double, the commonest, without a call to memcpy).
  static void copy_doubles(void* to, const void* from, std::size_t d) {
    if (d == 1)
      std::memcpy(to, from, 8);
    else
      std::memmove(to, from, 8 * d);
  }
  QuantizerSpec spec_;
};

// IEEE binary16 conversions, round to nearest even. Finite values beyond the
// largest half (65504) saturate to +-65504; infinities stay infinite, NaN stays NaN.
std::uint16_t double_to_half(double x);
double half_to_double(std::uint16_t h);

}  // namespace avb
