// Encodings travel as MPI bytes; Comm counts their size, which is what the trace's
// bytes_sent reports for quantized protocols.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace avb {

inline std::span<const std::uint8_t> wire(const std::vector<std::byte>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()};
}
inline std::span<const std::byte> unwire(std::span<const std::uint8_t> v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}

}  // namespace avb
