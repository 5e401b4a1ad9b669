// The lattice quantizer's codec (internal to src/protocols; the format and its
// guarantees: lattice.cpp and docs/protocols.md, "Quantizers").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "codecs/compress.hpp"

namespace avb::codec {

// Bytes of the encoding of a d-vector with modulus q, header included.
std::size_t lattice_bytes(std::uint32_t q, std::size_t d);

// Writes the encoding of x into `out`, already sized lattice_bytes and zeroed.
void encode_lattice(std::span<const double> x, const QuantizerSpec& spec, std::vector<std::byte>& out);

// Decodes the lattice_bytes at p near `reference` (size out.size(); throws Error
// otherwise) into out.
DecodeResult decode_lattice(const std::byte* p, std::span<const double> reference, std::span<double> out,
                            const QuantizerSpec& spec);

}  // namespace avb::codec
