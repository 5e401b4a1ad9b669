// The sequential engine's reading of a SimGrid platform file (--platform FILE,
// docs/simulation.md): the shapes its time model describes, and nothing else.
//
//   - one <cluster> (flat: hosts of one speed, each with a private link, joined by
//     an optional backbone; SimGrid's own element, and scripts/avbench platform's
//     homogeneous cluster);
//   - one <zone routing="Cluster"> that lists each <host>, its <link> (through
//     <host_link>) and one <backbone> (SimGrid's cluster of unequal hosts, and
//     scripts/avbench platform's cloud);
//   - several such clusters side by side in one <zone routing="Full">, each pair
//     joined by a <zoneRoute> through SHARED wide-area <link>s (scripts/avbench platform's
//     geo, or regions of unequal sizes, hosts, backbones and wide-area links).
// Host i is the i-th host in the file, as scripts/avbench platform's host files number
// them. Anything else (routers but a zone's gateway, zones nested deeper, routes
// between hosts, other topologies or sharing policies, links of different latencies
// in one cluster) is refused: such a platform runs under SMPI.
#pragma once

#include <string>

#include "protocols/time_model.hpp"

namespace avb::app {

// The platform of FILE for `peers` hosts at least. Throws ConfigError
// "--platform: FILE: ..." (malformed XML with its line, an unsupported element or
// attribute, a value without a valid unit, fewer hosts than peers).
PlatformModel read_platform_file(const std::string& path, int peers);
// The same from the file's text; `path` names it in the messages.
PlatformModel parse_platform(const std::string& text, const std::string& path, int peers);

// A SimGrid quantity: a number and a unit of `kind` ("f" flops/s, "Bps" bytes/s
// (bits with "bps"), "s" seconds), with SI or binary prefixes; a bare number is
// in the base unit. Latencies may be 0, speeds and bandwidths must be > 0, and
// all finite. Throws ConfigError naming `what`.
double parse_quantity(const std::string& text, const std::string& kind, const std::string& what);

}  // namespace avb::app
