// Quantizers. Every format is little-endian and byte-exact whatever the host, so
// two engines exchange and count the same bytes. Multi-bit codes (stochastic,
// lattice) are packed least significant bit first into a little-endian bit stream.
#include "codecs/compress.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/rng.hpp"
#include "codecs/codec_bits.hpp"
#include "codecs/lattice.hpp"

namespace avb {

using codec::BitReader;
using codec::BitWriter;
using codec::get_double;
using codec::packed_bytes;
using codec::put_double;

namespace {

[[noreturn]] void bad_quantizer(std::string_view text) {
  throw ConfigError("--quantizer: '" + std::string(text) + "' is not one of " + std::string(kReferenceFreeQuantizers) +
                    ", lattice");
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

// ---- uniform8 and stochastic: a (low, step) header of two doubles ------------

constexpr std::size_t kRangeHeader = 16;

// Non-finite header fields mean the sender had no finite range: decode fails.
DecodeResult decode_unrepresentable(std::span<double> out) {
  std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
  return DecodeResult{false};
}

// The dither for coordinate k: word k mod 4 of block (round, peer, k/4, message)
// of the dither stream, 53 bits, in [0, 1) (computed in batches in encode).

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
    const auto b = parse_int(text.substr(std::string_view("stochastic:").size()));
    if (!b || *b < 1 || *b > 16) bad_quantizer(text);
    spec.kind = QuantizerKind::stochastic;
    spec.bits = *b;
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

// ---- the quantizer ------------------------------------------------------------------

Quantizer::Quantizer(const QuantizerSpec& spec) : spec_(spec) { validate(spec_); }

std::size_t Quantizer::coded_bytes(std::size_t d) const {
  switch (spec_.kind) {
    case QuantizerKind::none: return 8 * d;
    case QuantizerKind::fp16: return 2 * d;
    case QuantizerKind::uniform8: return kRangeHeader + d;
    case QuantizerKind::stochastic: return kRangeHeader + packed_bytes(static_cast<std::size_t>(spec_.bits), d);
    case QuantizerKind::lattice: return codec::lattice_bytes(spec_.lattice_q, d);
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


}  // namespace

void Quantizer::encode_coded(std::span<const double> x, const EncodeContext& context,
                             std::vector<std::byte>& out) const {
  // none and fp16 write every byte (a buffer reused at one size is not even
  // resized: a swarm exchange encodes a few doubles at a time); the others pack
  // bits into zeroed bytes.
  const bool whole = spec_.kind == QuantizerKind::none || spec_.kind == QuantizerKind::fp16;
  const std::size_t bytes = encoded_bytes(x.size());
  if (!whole)
    out.assign(bytes, std::byte{0});
  else if (out.size() != bytes)
    out.resize(bytes);
  switch (spec_.kind) {
    case QuantizerKind::none: return encode_none(x, out);
    case QuantizerKind::fp16: return encode_fp16(x, out);
    case QuantizerKind::uniform8: return encode_uniform8(x, out);
    case QuantizerKind::stochastic: return encode_stochastic(x, spec_, context, out);
    case QuantizerKind::lattice: return codec::encode_lattice(x, spec_, out);
  }
}

DecodeResult Quantizer::decode_coded(std::span<const std::byte> in, std::span<const double> reference,
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
    case QuantizerKind::lattice: return codec::decode_lattice(p, reference, out, spec_);
  }
  return {};
}

}  // namespace avb
