// libFuzzer target: the bytes are a SimGrid platform file for the sequential
// engine (--platform FILE). A file it cannot model must end in avb::ConfigError;
// a file it accepts must describe hosts with finite positive speeds and
// bandwidths, as many listed speeds as bandwidths, and at least the peers asked
// for, and regions (when several) that start at host 0 in order, each pair joined
// by a route of the file's links (else the fuzzer stops on the trap below).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/platform_file.hpp"
#include "core/error.hpp"

namespace {

bool positive(double v) { return v > 0 && std::isfinite(v); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const avb::PlatformModel m = avb::app::parse_platform(text, "fuzz-input.xml", 4);
    if (!positive(m.host_speed) || !positive(m.bandwidth) || !(m.link_latency >= 0) || !(m.backbone > 0) ||
        !(m.backbone_latency >= 0))
      __builtin_trap();
    if ((m.listed_speeds == nullptr) != (m.listed_bandwidths == nullptr)) __builtin_trap();
    if (m.listed_speeds != nullptr) {
      if (m.listed_speeds->size() != m.listed_bandwidths->size() || m.listed_speeds->size() < 4) __builtin_trap();
      for (std::size_t i = 0; i < m.listed_speeds->size(); ++i)
        if (!positive((*m.listed_speeds)[i]) || !positive((*m.listed_bandwidths)[i])) __builtin_trap();
    }
    if (m.listed_regions != nullptr) {  // several regions: each pair joined by positive links
      const avb::RegionTable& t = *m.listed_regions;
      if (static_cast<int>(t.regions.size()) != m.regions || t.regions.empty() || t.regions[0].first_host != 0)
        __builtin_trap();
      for (std::size_t a = 0; a < t.regions.size(); ++a) {
        if (a > 0 && t.regions[a].first_host <= t.regions[a - 1].first_host) __builtin_trap();
        if (!(t.regions[a].backbone > 0) || !(t.regions[a].link_latency >= 0)) __builtin_trap();
        for (std::size_t b = 0; b < t.regions.size(); ++b) {
          const auto& route = t.route(static_cast<int>(a), static_cast<int>(b));
          if ((a != b) == route.empty()) __builtin_trap();
          for (int l : route)
            if (l < 0 || static_cast<std::size_t>(l) >= t.links.size() || !positive(t.links[static_cast<std::size_t>(l)].bandwidth))
              __builtin_trap();
        }
      }
    }
  } catch (const avb::ConfigError&) {
  }
  return 0;
}
