// Quantizers. Every format is little-endian and byte-exact whatever the host, so
// two engines exchange and count the same bytes. Multi-bit codes (stochastic,
// lattice) are packed least significant bit first into a little-endian bit stream.
#include "protocols/compress.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace avb {

namespace {

constexpr std::string_view kAccepted = "none, fp16, uniform8, stochastic:B (B in 1..16), lattice";

[[noreturn]] void bad_quantizer(std::string_view text) {
  throw ConfigError("--quantizer: '" + std::string(text) + "' is not one of " + std::string(kAccepted));
}

std::string shortest(double v) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}

void check_lattice(std::int64_t q, double eps) {
  if (q < 2 || q > std::numeric_limits<std::uint32_t>::max())
    throw ConfigError("--lattice-q: " + std::to_string(q) + " is not an integer in [2, 4294967295]");
  if (!(std::isfinite(eps) && eps > 0.0))
    throw ConfigError("--lattice-eps: " + shortest(eps) + " is not a finite number > 0");
}

// ---- bytes ------------------------------------------------------------------

void put_u64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint64_t get_u64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}
void put_double(std::byte* p, double v) { put_u64(p, std::bit_cast<std::uint64_t>(v)); }
double get_double(const std::byte* p) { return std::bit_cast<double>(get_u64(p)); }

// Codes of `bits` (1..32) bits each, LSB first.
class BitWriter {
 public:
  explicit BitWriter(std::byte* out) : out_(out) {}
  void put(std::uint64_t code, int bits) {
    acc_ |= code << fill_;  // fill_ < 8 and bits <= 32: no overflow
    fill_ += bits;
    while (fill_ >= 8) {
      *out_++ = static_cast<std::byte>(acc_);
      acc_ >>= 8;
      fill_ -= 8;
    }
  }
  void flush() {
    if (fill_ > 0) *out_++ = static_cast<std::byte>(acc_);
    acc_ = 0;
    fill_ = 0;
  }

 private:
  std::byte* out_;
  std::uint64_t acc_ = 0;
  int fill_ = 0;
};

class BitReader {
 public:
  explicit BitReader(const std::byte* in) : in_(in) {}
  std::uint64_t get(int bits) {
    while (fill_ < bits) {
      acc_ |= static_cast<std::uint64_t>(*in_++) << fill_;
      fill_ += 8;
    }
    const std::uint64_t code = acc_ & ((std::uint64_t{1} << bits) - 1);
    acc_ >>= bits;
    fill_ -= bits;
    return code;
  }

 private:
  const std::byte* in_;
  std::uint64_t acc_ = 0;
  int fill_ = 0;
};

std::size_t packed_bytes(std::size_t bits_per_code, std::size_t d) { return (bits_per_code * d + 7) / 8; }

// ---- uniform8 and stochastic: a (low, step) header of two doubles ------------

constexpr std::size_t kRangeHeader = 16;

// Non-finite header fields mean the sender had no finite range: decode fails.
DecodeResult decode_unrepresentable(std::span<double> out) {
  std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
  return DecodeResult{false};
}

// The dither for coordinate k: word k mod 4 of block (round, peer, k/4, message)
// of the dither stream, 53 bits, in [0, 1) (computed in batches in encode).

// ---- lattice ------------------------------------------------------------------
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

// ---- fp16 -----------------------------------------------------------------------


// Both conversions work on the bits (no libm calls, no dependence on the FP rounding
// mode), so the codecs' loops run at memory speed. They are exact re-statements of
// the arithmetic definitions: round to nearest even of a * 2^24 (subnormal halves)
// or of the 11-bit significand a * 2^(10-e) (normal halves).
std::uint16_t double_to_half(double x) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & 0x8000);
  const std::uint64_t abs = bits & 0x7fffffffffffffffull;
  if (abs >= 0x7ff0000000000000ull) return sign | (abs == 0x7ff0000000000000ull ? 0x7c00 : 0x7e00);  // inf, NaN
  if (abs >= 0x40effc0000000000ull) return sign | 0x7bff;  // >= 65504: saturate (nearest would give inf from 65520)
  const int e = static_cast<int>(abs >> 52) - 1023;        // unbiased exponent; -1023 for zeros and subnormals
  if (e < -25) return sign;  // below 2^-25: a * 2^24 < 1/2 rounds to 0 (doubles' subnormals included)
  // a = M * 2^(e-52) with the implicit bit. Normal half (e >= -14): the significand
  // a * 2^(10-e) = M * 2^-42; subnormal half: a * 2^24 = M * 2^(e-28).
  const std::uint64_t significand = (abs & 0x000fffffffffffffull) | 0x0010000000000000ull;
  const int shift = e >= -14 ? 42 : 28 - e;  // 42..53
  std::uint64_t q = significand >> shift;
  const std::uint64_t rest = significand & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  if (e < -14) return sign | static_cast<std::uint16_t>(q);  // q = 1024 is the smallest normal, whose bits are 0x0400
  // q in [1024, 2048]: exponent field e + 15, fraction q - 1024; q = 2048 carries
  // into the exponent (at most 65504 after the saturation test).
  return sign | static_cast<std::uint16_t>(((e + 15) << 10) + static_cast<int>(q) - 1024);
}

double half_to_double(std::uint16_t h) {
  const std::uint64_t e = (h >> 10) & 0x1f;
  const std::uint64_t f = h & 0x3ff;
  const std::uint64_t sign = static_cast<std::uint64_t>(h & 0x8000) << 48;
  if (e == 0) {  // zero or subnormal: f * 2^-24, exact
    const double a = static_cast<double>(f) * 0x1.0p-24;
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(a) | sign);
  }
  if (e == 31) return std::bit_cast<double>(sign | (f == 0 ? 0x7ff0000000000000ull : 0x7ff8000000000000ull));
  return std::bit_cast<double>(sign | ((e - 15 + 1023) << 52) | (f << 42));
}

// ---- specs ----------------------------------------------------------------------

QuantizerSpec parse_quantizer(std::string_view text, std::int64_t lattice_q, double lattice_eps) {
  check_lattice(lattice_q, lattice_eps);
  QuantizerSpec spec;
  spec.lattice_q = static_cast<std::uint32_t>(lattice_q);
  spec.lattice_eps = lattice_eps;
  if (text == "none") spec.kind = QuantizerKind::none;
  else if (text == "fp16") spec.kind = QuantizerKind::fp16;
  else if (text == "uniform8") spec.kind = QuantizerKind::uniform8;
  else if (text == "lattice") spec.kind = QuantizerKind::lattice;
  else if (text.starts_with("stochastic:")) {
    const std::string_view digits = text.substr(std::string_view("stochastic:").size());
    int b = 0;
    const char* end = digits.data() + digits.size();
    const auto [ptr, ec] = std::from_chars(digits.data(), end, b);
    if (digits.empty() || ec != std::errc() || ptr != end || b < 1 || b > 16) bad_quantizer(text);
    spec.kind = QuantizerKind::stochastic;
    spec.bits = b;
  } else {
    bad_quantizer(text);
  }
  return spec;
}

void validate(const QuantizerSpec& spec) {
  if (spec.kind == QuantizerKind::stochastic && (spec.bits < 1 || spec.bits > 16))
    bad_quantizer("stochastic:" + std::to_string(spec.bits));
  check_lattice(spec.lattice_q, spec.lattice_eps);
}

std::string to_string(const QuantizerSpec& spec) {
  switch (spec.kind) {
    case QuantizerKind::none: return "none";
    case QuantizerKind::fp16: return "fp16";
    case QuantizerKind::uniform8: return "uniform8";
    case QuantizerKind::stochastic: return "stochastic:" + std::to_string(spec.bits);
    case QuantizerKind::lattice: return "lattice";
  }
  return "?";
}

std::vector<std::pair<std::string, std::string>> describe(const QuantizerSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("quantizer", to_string(spec));
  if (spec.kind == QuantizerKind::lattice) {
    out.emplace_back("lattice-q", std::to_string(spec.lattice_q));
    out.emplace_back("lattice-eps", shortest(spec.lattice_eps));
  }
  return out;
}

// ---- the quantizer ------------------------------------------------------------------

Quantizer::Quantizer(const QuantizerSpec& spec) : spec_(spec) { validate(spec_); }

std::size_t Quantizer::encoded_bytes(std::size_t d) const {
  switch (spec_.kind) {
    case QuantizerKind::none: return 8 * d;
    case QuantizerKind::fp16: return 2 * d;
    case QuantizerKind::uniform8: return kRangeHeader + d;
    case QuantizerKind::stochastic: return kRangeHeader + packed_bytes(static_cast<std::size_t>(spec_.bits), d);
    case QuantizerKind::lattice:
      return kLatticeHeader + packed_bytes(static_cast<std::size_t>(lattice_bits(spec_.lattice_q)), d);
  }
  return 0;
}

namespace {

// One encoder and one decoder per kind; formats and bounds: docs/protocols.md,
// "Quantizers".

void encode_none(std::span<const double> x, std::vector<std::byte>& out) {
  const std::size_t d = x.size();
  std::byte* p = out.data();
  if constexpr (std::endian::native == std::endian::little) std::memcpy(p, x.data(), 8 * d);
  else
    for (std::size_t k = 0; k < d; ++k) put_double(p + 8 * k, x[k]);
}

void encode_fp16(std::span<const double> x, std::vector<std::byte>& out) {
  const std::size_t d = x.size();
  std::byte* p = out.data();
  for (std::size_t k = 0; k < d; ++k) {
    const std::uint16_t h = double_to_half(x[k]);
    p[2 * k] = static_cast<std::byte>(h & 0xff);
    p[2 * k + 1] = static_cast<std::byte>(h >> 8);
  }
}

void encode_uniform8(std::span<const double> x, std::vector<std::byte>& out) {
  const std::size_t d = x.size();
  std::byte* p = out.data();
  // Buckets of width w = 12 sigma / 256 from low = mean - 6 sigma (population
  // sigma); bucket c decodes to its midpoint. Values outside are clipped to the
  // first or last bucket. A constant vector has w = 0 and decodes exactly.
  double mean = 0.0, ss = 0.0;
  for (double v : x) mean += v;
  mean = d ? mean / static_cast<double>(d) : 0.0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double sigma = d ? std::sqrt(ss / static_cast<double>(d)) : 0.0;
  const double low = mean - 6.0 * sigma, width = 12.0 * sigma / 256.0;
  put_double(p, low);
  put_double(p + 8, width);
  if (!std::isfinite(low) || !std::isfinite(width)) return;  // decode fails
  for (std::size_t k = 0; k < d; ++k) {
    const double t = width > 0.0 ? std::floor((x[k] - low) / width) : 0.0;
    p[kRangeHeader + k] = static_cast<std::byte>(static_cast<unsigned>(std::clamp(t, 0.0, 255.0)));
  }
}

void encode_stochastic(std::span<const double> x, const QuantizerSpec& spec, const EncodeContext& context,
                       std::vector<std::byte>& out) {
  const std::size_t d = x.size();
  std::byte* p = out.data();
  // Levels low + l * step, l in [0, L], L = 2^B - 1, step = (max - min) / L.
  // With t = (x - low) / step, l = floor(t) + [u < t - floor(t)], u the dither:
  // E[l] = t, so E[decoded] = x, and |decoded - x| < step.
  const std::uint64_t levels = (std::uint64_t{1} << spec.bits) - 1;
  // One pass for min, max (the first of equal extremes, as std::min_element and
  // std::max_element) and NaN (then both are the last NaN, whose bits the header
  // carries).
  double low = 0.0, high = 0.0;
  if (d) {
    low = high = x[0];
    bool nan = false;
    double last_nan = 0.0;
    for (double v : x) {
      if (v < low) low = v;
      if (high < v) high = v;
      if (std::isnan(v)) nan = true, last_nan = v;
    }
    if (nan) low = high = last_nan;
  }
  const double step = (high - low) / static_cast<double>(levels);
  put_double(p, low);
  put_double(p + 8, step);
  if (!std::isfinite(low) || !std::isfinite(step)) return;  // decode fails
  BitWriter bits(p + kRangeHeader);
  const Stream stream(context.seed, StreamId::dither);
  const double top = static_cast<double>(levels);
  // Batches of 64 coordinates: first their dither (16 independent Philox blocks,
  // which the core overlaps), then their codes, then the packing.
  constexpr std::size_t kBatch = 64;
  double u[kBatch];
  std::uint64_t codes[kBatch] = {};
  for (std::size_t begin = 0; begin < d; begin += kBatch) {
    const std::size_t m = std::min(kBatch, d - begin);
    if (step > 0.0) {
      // Coordinate k's dither: word k mod 4 of block k / 4 (begin is a multiple of 4).
      for (std::size_t j = 0; j < m; j += 4) {
        const Stream::Block b = stream.block(context.round, context.peer, (begin + j) / 4, context.message);
        for (std::size_t w = 0; w < 4; ++w) u[j + w] = static_cast<double>(b.w[w] >> 11) * 0x1.0p-53;
      }
      for (std::size_t j = 0; j < m; ++j) {
        const double t = std::clamp((x[begin + j] - low) / step, 0.0, top);
        // floor(t) for 0 <= t < 2^16 by truncation: exact, and no libm call.
        const auto floor_t = static_cast<std::uint64_t>(t);
        const std::uint64_t l = floor_t + (u[j] < t - static_cast<double>(floor_t) ? 1 : 0);
        codes[j] = std::min(l, levels);
      }
    }
    for (std::size_t j = 0; j < m; ++j) bits.put(codes[j], spec.bits);
  }
  bits.flush();
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

DecodeResult decode_none(const std::byte* p, std::span<double> out) {
  const std::size_t d = out.size();
  if constexpr (std::endian::native == std::endian::little) std::memmove(out.data(), p, 8 * d);
  else
    for (std::size_t k = 0; k < d; ++k) out[k] = get_double(p + 8 * k);
  return {};
}

DecodeResult decode_fp16(const std::byte* p, std::span<double> out) {
  const std::size_t d = out.size();
  for (std::size_t k = 0; k < d; ++k)
    out[k] = half_to_double(static_cast<std::uint16_t>(static_cast<unsigned>(p[2 * k]) |
                                                      (static_cast<unsigned>(p[2 * k + 1]) << 8)));
  return {};
}

DecodeResult decode_uniform8(const std::byte* p, std::span<double> out) {
  const std::size_t d = out.size();
  const double low = get_double(p), width = get_double(p + 8);
  if (!std::isfinite(low) || !std::isfinite(width)) return decode_unrepresentable(out);
  for (std::size_t k = 0; k < d; ++k)
    out[k] = low + (static_cast<double>(static_cast<unsigned>(p[kRangeHeader + k])) + 0.5) * width;
  return {};
}

DecodeResult decode_stochastic(const std::byte* p, std::span<double> out, const QuantizerSpec& spec) {
  const std::size_t d = out.size();
  const double low = get_double(p), step = get_double(p + 8);
  if (!std::isfinite(low) || !std::isfinite(step)) return decode_unrepresentable(out);
  BitReader bits(p + kRangeHeader);
  for (std::size_t k = 0; k < d; ++k) out[k] = low + static_cast<double>(bits.get(spec.bits)) * step;
  return {};
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

}  // namespace

void Quantizer::encode(std::span<const double> x, const EncodeContext& context, std::vector<std::byte>& out) const {
  out.assign(encoded_bytes(x.size()), std::byte{0});
  switch (spec_.kind) {
    case QuantizerKind::none: return encode_none(x, out);
    case QuantizerKind::fp16: return encode_fp16(x, out);
    case QuantizerKind::uniform8: return encode_uniform8(x, out);
    case QuantizerKind::stochastic: return encode_stochastic(x, spec_, context, out);
    case QuantizerKind::lattice: return encode_lattice(x, spec_, out);
  }
}

DecodeResult Quantizer::decode(std::span<const std::byte> in, std::span<const double> reference,
                               std::span<double> out) const {
  const std::size_t d = out.size();
  if (in.size() != encoded_bytes(d))
    throw Error("Quantizer " + to_string(spec_) + ": " + std::to_string(in.size()) + " bytes received, " +
                std::to_string(encoded_bytes(d)) + " expected for " + std::to_string(d) + " values");
  const std::byte* p = in.data();
  switch (spec_.kind) {
    case QuantizerKind::none: return decode_none(p, out);
    case QuantizerKind::fp16: return decode_fp16(p, out);
    case QuantizerKind::uniform8: return decode_uniform8(p, out);
    case QuantizerKind::stochastic: return decode_stochastic(p, out, spec_);
    case QuantizerKind::lattice: return decode_lattice(p, reference, out, spec_);
  }
  return {};
}

}  // namespace avb
