// libFuzzer target: the bytes are a SimGrid platform file for the sequential
// engine (--platform FILE). A file it cannot model must end in avb::ConfigError;
// a file it accepts must describe hosts with finite positive speeds and
// bandwidths, as many listed speeds as bandwidths, and at least the peers asked
// for (else the fuzzer stops on the trap below).
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
  } catch (const avb::ConfigError&) {
  }
  return 0;
}
