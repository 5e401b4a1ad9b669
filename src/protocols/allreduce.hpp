#pragma once

#include <memory>

#include "protocols/protocol.hpp"

namespace avb {

// All-reduce over the whole world (protocols/allreduce.cpp). Supports the
// `abort` (default) and `survivors` failure semantics.
std::unique_ptr<Protocol> make_allreduce(FailureSemantics semantics, Collective collective);

}  // namespace avb
