// The objective's options: resolve() and describe().
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "core/error.hpp"
#include "sgd/objective.hpp"

namespace avb {
namespace {

// The shortest text that reads back to the same double.
std::string shortest_text(double v) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return ec == std::errc() ? std::string(buffer, end) : std::to_string(v);
}

}  // namespace

// ---- options --------------------------------------------------------------------

ObjectiveOptions resolve(const ObjectiveOptions& options, int n_peers) {
  check_peer(pooled, n_peers);
  const ObjectiveOptions& o = options;
  auto non_negative = [](const char* flag, double v) {
    if (!(v >= 0.0 && std::isfinite(v)))
      throw ConfigError(std::string(flag) + ": " + shortest_text(v) + " is not a number >= 0");
  };
  const bool synthetic = o.kind == ObjectiveKind::logistic && o.data_path.empty();
  if (o.data_limit < 0)
    throw ConfigError("--data-limit: " + std::to_string(o.data_limit) + " is not an integer >= 0 (0: every sample)");
  if (o.data_limit > 0 && o.data_limit < n_peers)
    throw ConfigError("--data-limit: " + std::to_string(o.data_limit) + " samples cannot be split across " +
                      std::to_string(n_peers) + " peers");
  if (!(o.dirichlet_alpha > 0.0 && std::isfinite(o.dirichlet_alpha)))
    throw ConfigError("--dirichlet-alpha: " + shortest_text(o.dirichlet_alpha) + " is not a number > 0");
  if (classifies_images(o.kind)) {
    if (o.data_path.empty())
      throw ConfigError("--objective " + std::string(to_string(o.kind)) +
                        ": needs --data (an IDX images file such as Fashion-MNIST's train-images-idx3-ubyte.gz)");
    if (!(o.l2 >= 0.0 && std::isfinite(o.l2)))
      throw ConfigError("--l2: " + shortest_text(o.l2) + " is not a number >= 0 (0: 1/m, m the training samples)");
    if (o.kind == ObjectiveKind::mlp && !(o.hidden >= 1 && o.hidden <= kMaxHidden))
      throw ConfigError("--hidden: " + std::to_string(o.hidden) + " is not an integer in [1, " +
                        std::to_string(kMaxHidden) + "]");
    return options;
  }
  if ((o.kind == ObjectiveKind::quadratic || synthetic) && o.dim < 1)
    throw ConfigError("--dim: " + std::to_string(o.dim) + " is not an integer >= 1");
  if (o.kind == ObjectiveKind::quadratic) {
    non_negative("--zeta", o.heterogeneity);
    non_negative("--sigma", o.gradient_noise);
    if (o.preset == QuadraticPreset::conditioned) {
      if (!(o.condition >= 1.0 && std::isfinite(o.condition)))
        throw ConfigError("--condition: " + shortest_text(o.condition) + " is not a number >= 1");
      if (o.dim == 1 && o.condition != 1.0)
        throw ConfigError("--condition: " + shortest_text(o.condition) +
                          " needs --dim >= 2 (one coordinate has condition 1)");
    }
  } else if (synthetic) {
    if (o.samples_per_peer < 1)
      throw ConfigError("--samples-per-peer: " + std::to_string(o.samples_per_peer) + " is not an integer >= 1");
    non_negative("--separation", o.separation);
    if (!(o.label_skew >= 0.0 && o.label_skew <= 1.0))
      throw ConfigError("--label-skew: " + shortest_text(o.label_skew) + " is not a number in [0, 1]");
  } else if (o.data_dim < 0) {
    throw ConfigError("--data-dim: " + std::to_string(o.data_dim) + " is not an integer >= 0 (0: from the file)");
  }
  return options;
}

std::vector<std::pair<std::string, std::string>> describe(const ObjectiveOptions& o) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("objective", std::string(to_string(o.kind)));
  if (o.kind == ObjectiveKind::quadratic) {
    out.emplace_back("dim", std::to_string(o.dim));
    out.emplace_back("preset", std::string(to_string(o.preset)));
    if (o.preset == QuadraticPreset::conditioned) out.emplace_back("condition", shortest_text(o.condition));
    out.emplace_back("zeta", shortest_text(o.heterogeneity));
    out.emplace_back("sigma", shortest_text(o.gradient_noise));
  } else if (o.data_path.empty()) {
    out.emplace_back("data", "synthetic");
    out.emplace_back("dim", std::to_string(o.dim));
    out.emplace_back("samples-per-peer", std::to_string(o.samples_per_peer));
    out.emplace_back("separation", shortest_text(o.separation));
    out.emplace_back("label-skew", shortest_text(o.label_skew));
  } else {
    out.emplace_back("data", o.data_path);
    if (o.kind == ObjectiveKind::logistic) out.emplace_back("data-dim", std::to_string(o.data_dim));
    out.emplace_back("split", std::string(to_string(o.split)));
    if (o.split == DataSplit::dirichlet) out.emplace_back("dirichlet-alpha", shortest_text(o.dirichlet_alpha));
    if (classifies_images(o.kind) || o.data_limit > 0) out.emplace_back("data-limit", std::to_string(o.data_limit));
    if (classifies_images(o.kind)) out.emplace_back("l2", shortest_text(o.l2));
    if (o.kind == ObjectiveKind::mlp) out.emplace_back("hidden", std::to_string(o.hidden));
  }
  return out;
}

}  // namespace avb
