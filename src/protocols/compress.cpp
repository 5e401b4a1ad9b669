// Quantizers. Every format is little-endian and byte-exact whatever the host, so
// two engines exchange and count the same bytes. Multi-bit codes (stochastic,
// lattice) are packed least significant bit first into a little-endian bit stream.
#include "protocols/compress.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
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

// The dither for coordinate k: word k mod 4 of block (round, peer, k/4, message),
// 53 bits, in [0, 1).
class Dither {
 public:
  explicit Dither(const EncodeContext& c) : stream_(c.seed, StreamId::dither), context_(c) {}
  double operator()(std::size_t k) {
    if (k / 4 != cached_) {
      cached_ = k / 4;
      block_ = stream_.block(context_.round, context_.peer, cached_, context_.message);
    }
    return static_cast<double>(block_.w[k % 4] >> 11) * 0x1.0p-53;
  }

 private:
  Stream stream_;
  EncodeContext context_;
  std::uint64_t cached_ = ~std::uint64_t{0};
  Stream::Block block_{};
};

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

std::uint64_t mod_q(std::int64_t k, std::uint32_t q) {
  const std::int64_t r = k % static_cast<std::int64_t>(q);
  return static_cast<std::uint64_t>(r < 0 ? r + q : r);
}

}  // namespace

// ---- fp16 -----------------------------------------------------------------------

namespace {
// Round m >= 0 to the nearest integer, ties to even, whatever the FP rounding mode.
double round_half_even(double m) {
  const double r = std::floor(m);
  const double frac = m - r;  // exact
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) return r + 1.0;
  return r;
}
}  // namespace

std::uint16_t double_to_half(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (std::isnan(x)) return sign | 0x7e00;
  if (std::isinf(x)) return sign | 0x7c00;
  if (a >= 65504.0) return sign | 0x7bff;  // saturate (round to nearest would give inf from 65520 up)
  if (a < 0x1.0p-14) {
    // Subnormal: units of 2^-24; 1024 units is the smallest normal, whose bits are 0x0400.
    return sign | static_cast<std::uint16_t>(round_half_even(a * 0x1.0p24));
  }
  int e = std::ilogb(a);                               // -14..15
  double m = round_half_even(std::ldexp(a, 10 - e));   // in [1024, 2048], scaling exact
  if (m == 2048.0) {
    m = 1024.0;
    ++e;  // e <= 15 still: a < 65504 rounds to at most 65504
  }
  return sign | static_cast<std::uint16_t>(((e + 15) << 10) | (static_cast<int>(m) - 1024));
}

double half_to_double(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int f = h & 0x3ff;
  double a;
  if (e == 0) a = std::ldexp(static_cast<double>(f), -24);
  else if (e == 31) a = f == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else a = std::ldexp(static_cast<double>(1024 + f), e - 25);
  return (h & 0x8000) ? -a : a;
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

void Quantizer::encode(std::span<const double> x, const EncodeContext& context, std::vector<std::byte>& out) const {
  const std::size_t d = x.size();
  out.assign(encoded_bytes(d), std::byte{0});
  std::byte* p = out.data();
  switch (spec_.kind) {
    case QuantizerKind::none:
      for (std::size_t k = 0; k < d; ++k) put_double(p + 8 * k, x[k]);
      return;

    case QuantizerKind::fp16:
      for (std::size_t k = 0; k < d; ++k) {
        const std::uint16_t h = double_to_half(x[k]);
        p[2 * k] = static_cast<std::byte>(h & 0xff);
        p[2 * k + 1] = static_cast<std::byte>(h >> 8);
      }
      return;

    case QuantizerKind::uniform8: {
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
      return;
    }

    case QuantizerKind::stochastic: {
      // Levels low + l * step, l in [0, L], L = 2^B - 1, step = (max - min) / L.
      // With t = (x - low) / step, l = floor(t) + [u < t - floor(t)], u the dither:
      // E[l] = t, so E[decoded] = x, and |decoded - x| < step.
      const std::uint64_t levels = (std::uint64_t{1} << spec_.bits) - 1;
      double low = 0.0, high = 0.0;
      if (d) {
        low = *std::min_element(x.begin(), x.end());
        high = *std::max_element(x.begin(), x.end());
        for (double v : x)
          if (std::isnan(v)) low = high = v;
      }
      const double step = (high - low) / static_cast<double>(levels);
      put_double(p, low);
      put_double(p + 8, step);
      if (!std::isfinite(low) || !std::isfinite(step)) return;  // decode fails
      BitWriter bits(p + kRangeHeader);
      Dither dither(context);
      for (std::size_t k = 0; k < d; ++k) {
        std::uint64_t l = 0;
        if (step > 0.0) {
          const double t = std::clamp((x[k] - low) / step, 0.0, static_cast<double>(levels));
          const double floor_t = std::floor(t);
          l = static_cast<std::uint64_t>(floor_t) + (dither(k) < t - floor_t ? 1 : 0);
          l = std::min(l, levels);
        }
        bits.put(l, spec_.bits);
      }
      bits.flush();
      return;
    }

    case QuantizerKind::lattice: {
      const double eps = spec_.lattice_eps;
      const std::uint32_t q = spec_.lattice_q;
      const int width = lattice_bits(q);
      BitWriter bits(p + kLatticeHeader);
      std::uint64_t checksum = 0;
      for (std::size_t k = 0; k < d; ++k) {
        const double r = std::round(x[k] / eps);
        if (!(std::fabs(r) <= kLatticeLimit)) {  // also NaN
          std::fill(out.begin(), out.end(), std::byte{0});
          p[0] = std::byte{1};  // status: not encodable
          return;
        }
        const auto index = static_cast<std::int64_t>(r);
        checksum += mix(k, index);
        bits.put(mod_q(index, q), width);
      }
      bits.flush();
      p[0] = std::byte{0};
      put_u64(p + 1, checksum);
      return;
    }
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
    case QuantizerKind::none:
      for (std::size_t k = 0; k < d; ++k) out[k] = get_double(p + 8 * k);
      return {};

    case QuantizerKind::fp16:
      for (std::size_t k = 0; k < d; ++k)
        out[k] = half_to_double(static_cast<std::uint16_t>(static_cast<unsigned>(p[2 * k]) |
                                                          (static_cast<unsigned>(p[2 * k + 1]) << 8)));
      return {};

    case QuantizerKind::uniform8: {
      const double low = get_double(p), width = get_double(p + 8);
      if (!std::isfinite(low) || !std::isfinite(width)) return decode_unrepresentable(out);
      for (std::size_t k = 0; k < d; ++k)
        out[k] = low + (static_cast<double>(static_cast<unsigned>(p[kRangeHeader + k])) + 0.5) * width;
      return {};
    }

    case QuantizerKind::stochastic: {
      const double low = get_double(p), step = get_double(p + 8);
      if (!std::isfinite(low) || !std::isfinite(step)) return decode_unrepresentable(out);
      BitReader bits(p + kRangeHeader);
      for (std::size_t k = 0; k < d; ++k) out[k] = low + static_cast<double>(bits.get(spec_.bits)) * step;
      return {};
    }

    case QuantizerKind::lattice: {
      if (reference.size() != d)
        throw Error("Quantizer lattice: a reference of " + std::to_string(reference.size()) + " values for " +
                    std::to_string(d) + " values");
      const double eps = spec_.lattice_eps;
      const std::uint32_t q = spec_.lattice_q;
      const double qd = static_cast<double>(q);
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
        double m = std::round((beta - static_cast<double>(v)) / qd);
        if (!(std::fabs(beta) <= 0x1.0p54)) m = 0.0;
        const std::int64_t index = v + static_cast<std::int64_t>(q) * static_cast<std::int64_t>(m);
        checksum += mix(k, index);
        out[k] = eps * static_cast<double>(index);
      }
      return DecodeResult{encodable && checksum == get_u64(p + 1)};
    }
  }
  return {};
}

}  // namespace avb
