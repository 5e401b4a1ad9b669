// SwarmSGD's asynchronous pairwise averaging (docs/protocols.md, swarm).
#pragma once

#include <memory>

#include "protocols/protocol.hpp"

namespace avb {

// `options` resolved (topology set). The protocol keeps `comm`, the trial's
// communicator, to serve partners' requests from progress() and settle().
std::unique_ptr<Protocol> make_swarm(const ProtocolOptions& options, Comm& comm);

}  // namespace avb
