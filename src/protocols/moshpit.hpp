// Protocol "moshpit": Moshpit All-Reduce (Ryabinin et al., NeurIPS 2021).
#pragma once

#include <memory>

#include "protocols/protocol.hpp"

namespace avb {

// `options` resolved for `n_peers` (grid set).
std::unique_ptr<Protocol> make_moshpit(const ProtocolOptions& options, int n_peers);

}  // namespace avb
