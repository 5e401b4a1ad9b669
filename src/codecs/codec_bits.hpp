// Byte and bit layout shared by the quantizer codecs (internal to src/protocols):
// little-endian words whatever the host, and codes packed least significant bit
// first into a little-endian bit stream.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace avb::codec {

inline void put_u64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline std::uint64_t get_u64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}
inline void put_double(std::byte* p, double v) { put_u64(p, std::bit_cast<std::uint64_t>(v)); }
inline double get_double(const std::byte* p) { return std::bit_cast<double>(get_u64(p)); }

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

inline std::size_t packed_bytes(std::size_t bits_per_code, std::size_t d) { return (bits_per_code * d + 7) / 8; }

}  // namespace avb::codec
