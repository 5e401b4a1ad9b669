#include "sim/stragglers.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"

namespace avb {

void validate(const StragglerSpec& spec) {
  if (!(spec.fraction >= 0.0 && spec.fraction <= 1.0))
    throw ConfigError("--stragglers: " + format_number(spec.fraction) + " is not a number in [0, 1]");
  if (!(spec.slowdown >= 1.0 && std::isfinite(spec.slowdown)))
    throw ConfigError("--straggler-slowdown: " + format_number(spec.slowdown) + " is not a number >= 1");
}

std::vector<std::pair<std::string, std::string>> describe(const StragglerSpec& spec) {
  return {{"stragglers", format_number(spec.fraction)}, {"straggler-slowdown", format_number(spec.slowdown)}};
}

}  // namespace avb
