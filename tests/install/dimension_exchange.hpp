// A protocol defined outside avbench: dimension exchange on a hypercube. In round
// t every alive peer averages with the peer whose rank differs in bit
// (t - 1) mod log2(N), when that peer is alive too; with no failures, after
// log2(N) rounds every peer holds the exact mean.
#pragma once

#include "protocols/protocol.hpp"

namespace external {

// Its catalog row, for avb::register_protocol.
const avb::ProtocolInfo& dimension_exchange_info();

}  // namespace external
