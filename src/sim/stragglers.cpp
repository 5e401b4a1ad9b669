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
  if (!(spec.sigma >= 0.0 && spec.sigma <= 4.0))
    throw ConfigError("--straggler-sigma: " + format_number(spec.sigma) + " is not a number in [0, 4]");
}

std::vector<std::pair<std::string, std::string>> describe(const StragglerSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out{{"stragglers", format_number(spec.fraction)},
                                                       {"straggler-slowdown", format_number(spec.slowdown)}};
  if (spec.sigma > 0) out.emplace_back("straggler-sigma", format_number(spec.sigma));
  return out;
}

}  // namespace avb
