// libFuzzer target: the bytes are a file:PATH topology's edge list, built into a
// Topology for a few peer counts. A bad file must end in avb::ConfigError; a
// graph that is accepted must give mixing rows that are rows of a stochastic
// matrix (else the fuzzer stops on the trap below).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "sim/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const avb::TopologySpec spec = avb::parse_topology("file:fuzz-input.txt");
  for (const int n : {1, 2, 5, 64}) {
    std::istringstream in(text);
    try {
      const avb::Topology graph(spec, n, in);
      for (const auto weights : {avb::Weights::uniform, avb::Weights::metropolis})
        for (int i = 0; i < n; ++i) {
          const avb::MixingRow row = graph.mixing_row(weights, 1, i);
          double sum = 0.0;
          for (double w : row.weights) sum += w;
          if (row.peers.size() != row.weights.size() || std::abs(sum - 1.0) > 1e-9) __builtin_trap();
        }
      (void)graph.edges(1);
    } catch (const avb::ConfigError&) {
    }
  }
  return 0;
}
