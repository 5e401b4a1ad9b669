#include "core/rng.hpp"

#include <Random123/philox.h>

#include <cmath>
#include <numbers>

namespace avb {

Stream::Block Stream::block(std::uint64_t round, std::uint64_t peer, std::uint64_t draw,
                            std::uint64_t extra) const {
  r123::Philox4x64 philox;
  r123::Philox4x64::ctr_type ctr = {{round, peer, draw, extra}};
  r123::Philox4x64::key_type key = {{seed_, id_}};
  const auto out = philox(ctr, key);
  return Block{{out.v[0], out.v[1], out.v[2], out.v[3]}};
}

std::uint64_t Stream::bits(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const {
  // block()'s first word, without the other three copied out.
  r123::Philox4x64 philox;
  return philox(r123::Philox4x64::ctr_type{{round, peer, draw, 0}}, r123::Philox4x64::key_type{{seed_, id_}}).v[0];
}

double Stream::uniform(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const {
  return static_cast<double>(bits(round, peer, draw) >> 11) * 0x1.0p-53;
}

double Stream::uniform_open0(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const {
  return static_cast<double>((bits(round, peer, draw) >> 11) + 1) * 0x1.0p-53;
}

double Stream::normal(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const {
  const Block b = block(round, peer, draw, 0);
  const double u1 = static_cast<double>((b.w[0] >> 11) + 1) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(b.w[1] >> 11) * 0x1.0p-53;        // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::uint64_t Stream::below(std::uint64_t n, std::uint64_t round, std::uint64_t peer,
                            std::uint64_t draw) const {
  // Lemire: the high word of x*n is uniform on [0, n) once the low word is outside
  // the biased zone; the zone has fewer than n of 2^64 values, so rejection is rare.
  const std::uint64_t threshold = (0 - n) % n;
  for (std::uint64_t extra = 0;; ++extra) {
    const Block b = block(round, peer, draw, extra);
    for (std::uint64_t x : b.w) {
      const unsigned __int128 m = static_cast<unsigned __int128>(x) * n;
      if (static_cast<std::uint64_t>(m) >= threshold) return static_cast<std::uint64_t>(m >> 64);
    }
  }
}

}  // namespace avb
