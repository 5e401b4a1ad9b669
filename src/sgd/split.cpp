// How a data set's rows are dealt to the peers (--split; sgd/objective.hpp,
// peer_rows).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sgd/data_draws.hpp"
#include "sgd/objective.hpp"

namespace avb {

void check_splittable(long long samples, int n_peers, const std::string& path) {
  if (samples < n_peers)
    throw ConfigError("--data " + path + ": " + std::to_string(samples) + " samples cannot be split across " +
                      std::to_string(n_peers) + " peers");
}

namespace {

// A keyed Fisher-Yates shuffle of `rows` at counter (round, peer, p).
void shuffle(std::vector<int>& rows, const Stream& stream, std::uint64_t round, std::uint64_t peer) {
  for (std::size_t p = rows.size(); p > 1; --p) {
    const auto j = stream.below(p, round, peer, p - 1);
    std::swap(rows[p - 1], rows[static_cast<std::size_t>(j)]);
  }
}

// random and label-sorted: contiguous blocks of one order of all rows.
std::vector<std::vector<int>> block_split(const Eigen::VectorXd& labels, DataSplit split, int n_peers,
                                          std::uint64_t seed) {
  std::vector<int> order(static_cast<std::size_t>(labels.size()));
  std::iota(order.begin(), order.end(), 0);
  if (split == DataSplit::sorted)
    std::stable_sort(order.begin(), order.end(), [&](int r, int s) { return labels[r] < labels[s]; });
  else
    shuffle(order, Stream(seed, StreamId::data), draw_shuffle, 0);
  std::vector<std::vector<int>> out(static_cast<std::size_t>(n_peers));
  const std::size_t m = order.size(), n = out.size();
  for (std::size_t i = 0; i < n; ++i) {
    out[i].assign(order.begin() + static_cast<std::ptrdiff_t>(i * m / n),
                  order.begin() + static_cast<std::ptrdiff_t>((i + 1) * m / n));
    if (split == DataSplit::random) std::sort(out[i].begin(), out[i].end());
  }
  return out;
}

// Gamma(shape, 1) by Marsaglia and Tsang's method (ACM TOMS 26(3), 2000), from the
// keyed draws of counter (round, peer, base + k); shape < 1 boosts Gamma(shape + 1)
// by u^(1/shape).
double keyed_gamma(double shape, const Stream& stream, std::uint64_t round, std::uint64_t peer, std::uint64_t base) {
  const double a = shape < 1.0 ? shape + 1.0 : shape;
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  double value = d;  // after 63 rejections (probability below 1e-80), the mode
  for (std::uint64_t attempt = 0; attempt < 63; ++attempt) {
    const double z = stream.normal(round, peer, base + 2 * attempt);
    const double v = std::pow(1.0 + c * z, 3);
    if (v <= 0.0) continue;
    const double u = stream.uniform_open0(round, peer, base + 2 * attempt + 1);
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) {
      value = d * v;
      break;
    }
  }
  if (shape < 1.0) value *= std::pow(stream.uniform_open0(round, peer, base + 127), 1.0 / shape);
  return value;
}

// dirichlet: class c's rows in a keyed order, cut at the cumulative shares of
// q_c ~ Dir(alpha, ..., alpha), drawn as normalised Gamma(alpha) variates.
std::vector<std::vector<int>> dirichlet_split(const Eigen::VectorXd& labels, double alpha, int n_peers,
                                              std::uint64_t seed) {
  const Stream stream(seed, StreamId::data);
  std::map<double, std::vector<int>> classes;  // by label value, ascending
  for (Eigen::Index r = 0; r < labels.size(); ++r) classes[labels[r]].push_back(static_cast<int>(r));
  const auto n = static_cast<std::size_t>(n_peers);
  std::vector<std::vector<int>> out(n);
  std::uint64_t c = 0;
  std::vector<double> shares(n);
  for (auto& [label, rows] : classes) {
    shuffle(rows, stream, draw_class_order, c);
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) total += shares[i] = keyed_gamma(alpha, stream, draw_class_share, c, i * 128);
    if (!(total > 0.0)) {  // every draw underflowed (alpha near 0): the class goes to one peer
      std::fill(shares.begin(), shares.end(), 0.0);
      shares[c % n] = total = 1.0;
    }
    double cumulative = 0.0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < n; ++i) {
      cumulative += shares[i];
      const std::size_t last =
          i + 1 == n ? rows.size()
                     : std::min(rows.size(), static_cast<std::size_t>(std::floor(cumulative / total * rows.size())));
      out[i].insert(out[i].end(), rows.begin() + static_cast<std::ptrdiff_t>(first),
                    rows.begin() + static_cast<std::ptrdiff_t>(std::max(first, last)));
      first = std::max(first, last);
    }
    ++c;
  }
  for (auto& rows : out) std::sort(rows.begin(), rows.end());
  // Every peer needs a sample: an empty one takes the last row of the largest
  // shard (the first of equal sizes).
  for (auto& rows : out) {
    if (!rows.empty()) continue;
    auto largest = std::max_element(out.begin(), out.end(),
                                    [](const auto& a, const auto& b) { return a.size() < b.size(); });
    rows.push_back(largest->back());
    largest->pop_back();
  }
  return out;
}

}  // namespace

std::vector<std::vector<int>> peer_rows(const Eigen::VectorXd& labels, const SplitSpec& split, int n_peers,
                                        std::uint64_t seed, const std::string& path_for_errors) {
  check_peer(pooled, n_peers);
  check_splittable(labels.size(), n_peers, path_for_errors);
  if (split.kind == DataSplit::dirichlet) return dirichlet_split(labels, split.alpha, n_peers, seed);
  return block_split(labels, split.kind, n_peers, seed);
}

std::vector<int> shard_rows(const Dataset& data, const SplitSpec& split, int peer, int n_peers, std::uint64_t seed,
                            const std::string& path_for_errors) {
  return shard_rows(data.labels, split, peer, n_peers, seed, path_for_errors);
}

std::vector<int> shard_rows(const Eigen::VectorXd& labels, const SplitSpec& split, int peer, int n_peers,
                            std::uint64_t seed, const std::string& path_for_errors) {
  check_peer(peer, n_peers);
  if (peer == pooled) throw std::invalid_argument("shard_rows: a shard belongs to one peer");
  return std::move(peer_rows(labels, split, n_peers, seed, path_for_errors)[static_cast<std::size_t>(peer)]);
}

std::vector<int> row_owners(const Eigen::VectorXd& labels, const SplitSpec& split, int n_peers, std::uint64_t seed,
                            const std::string& path_for_errors) {
  const std::vector<std::vector<int>> shards = peer_rows(labels, split, n_peers, seed, path_for_errors);
  std::vector<int> owners(static_cast<std::size_t>(labels.size()));
  for (std::size_t i = 0; i < shards.size(); ++i)
    for (int r : shards[i]) owners[static_cast<std::size_t>(r)] = static_cast<int>(i);
  return owners;
}

}  // namespace avb
