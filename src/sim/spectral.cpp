#include "sim/spectral.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>

#include <Eigen/Eigenvalues>

#include "core/error.hpp"

namespace avb {

namespace {

// Entries are built from the same formulas in both positions, so symmetric and
// circulant matrices match to the last bit; the tolerance only forgives rounding
// in matrices that come from elsewhere.
constexpr double structure_tolerance = 1e-12;

bool is_symmetric(const Eigen::MatrixXd& W) {
  const Eigen::Index n = W.rows();
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index i = j + 1; i < n; ++i)
      if (std::abs(W(i, j) - W(j, i)) > structure_tolerance) return false;
  return true;
}

bool is_circulant(const Eigen::MatrixXd& W) {
  const Eigen::Index n = W.rows();
  for (Eigen::Index i = 1; i < n; ++i)
    for (Eigen::Index j = 0; j < n; ++j)
      if (std::abs(W(i, j) - W(0, (j - i + n) % n)) > structure_tolerance) return false;
  return true;
}

// lambda_m = sum_k c_k e^(2 pi i m k / n), c the first row: the eigenvector
// (w^(m j))_j of a circulant matrix has W v = lambda_m v.
std::vector<std::complex<double>> circulant_eigenvalues(const Eigen::MatrixXd& W) {
  const Eigen::Index n = W.rows();
  std::vector<Eigen::Index> support;
  for (Eigen::Index k = 0; k < n; ++k)
    if (W(0, k) != 0.0) support.push_back(k);
  // Twiddles by index, so angles are reduced exactly (m k mod n) before the cosine.
  std::vector<std::complex<double>> twiddle(static_cast<std::size_t>(n));
  for (Eigen::Index r = 0; r < n; ++r)
    twiddle[static_cast<std::size_t>(r)] = std::polar(1.0, 2.0 * std::numbers::pi * static_cast<double>(r) /
                                                                static_cast<double>(n));
  std::vector<std::complex<double>> lambda(static_cast<std::size_t>(n));
  for (Eigen::Index m = 0; m < n; ++m) {
    std::complex<double> sum = 0.0;
    for (Eigen::Index k : support) sum += W(0, k) * twiddle[static_cast<std::size_t>((m * k) % n)];
    lambda[static_cast<std::size_t>(m)] = sum;
  }
  return lambda;
}

}  // namespace

Eigen::MatrixXd mixing_matrix(const Topology& topology, Weights weights, int t) {
  const int n = topology.peers();
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    const MixingRow row = topology.mixing_row(weights, t, i);
    for (std::size_t k = 0; k < row.peers.size(); ++k) W(i, row.peers[k]) = row.weights[k];
  }
  return W;
}

std::vector<std::complex<double>> eigenvalues(const Eigen::MatrixXd& W) {
  if (W.rows() != W.cols()) throw Error("eigenvalues: the matrix is not square");
  if (W.rows() == 0) return {};
  if (is_circulant(W)) return circulant_eigenvalues(W);
  std::vector<std::complex<double>> lambda;
  lambda.reserve(static_cast<std::size_t>(W.rows()));
  if (is_symmetric(W)) {
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(W, Eigen::EigenvaluesOnly);
    if (solver.info() != Eigen::Success) throw Error("eigenvalues: the symmetric eigensolver did not converge");
    for (double value : solver.eigenvalues()) lambda.emplace_back(value, 0.0);
  } else {
    const Eigen::EigenSolver<Eigen::MatrixXd> solver(W, /*computeEigenvectors=*/false);
    if (solver.info() != Eigen::Success) throw Error("eigenvalues: the eigensolver did not converge");
    for (const auto& value : solver.eigenvalues()) lambda.push_back(value);
  }
  return lambda;
}

double second_largest_modulus(const Eigen::MatrixXd& W) {
  const auto lambda = eigenvalues(W);
  if (lambda.size() < 2) return 0.0;
  std::vector<double> modulus;
  modulus.reserve(lambda.size());
  for (const auto& value : lambda) modulus.push_back(std::abs(value));
  std::nth_element(modulus.begin(), modulus.begin() + 1, modulus.end(), std::greater<>());
  return modulus[1];
}

double laplacian_lambda2(const Topology& topology) {
  const int n = topology.peers();
  if (n < 2) return 0.0;
  Eigen::MatrixXd L = Eigen::MatrixXd::Zero(n, n);
  for (const auto& [i, j] : topology.edges(1)) {
    L(i, j) -= 1.0;
    L(j, i) -= 1.0;
    L(i, i) += 1.0;
    L(j, j) += 1.0;
  }
  std::vector<double> values;
  for (const auto& value : eigenvalues(L)) values.push_back(value.real());  // L symmetric: real spectrum
  std::nth_element(values.begin(), values.begin() + 1, values.end());
  return values[1];
}

std::vector<double> predicted_variance_ratio(const Topology& topology, Weights weights, int rounds) {
  if (topology.time_varying())
    throw ConfigError("predicted_variance_ratio: needs a static --topology (one-peer-exp changes every round)");
  const Eigen::MatrixXd W = mixing_matrix(topology, weights, 1);
  if (!is_symmetric(W) && !is_circulant(W) &&
      (W * W.transpose() - W.transpose() * W).cwiseAbs().maxCoeff() > 1e-10)
    throw ConfigError(std::string("predicted_variance_ratio: the --weights ") + std::string(to_string(weights)) +
                      " mixing matrix of this --topology is not normal, so its spectrum does not give the "
                      "variance (use metropolis weights, or a regular graph)");

  std::vector<double> ratio(static_cast<std::size_t>(std::max(rounds, 0)) + 1, 0.0);
  ratio[0] = 1.0;
  const int n = topology.peers();
  if (n < 2) return ratio;

  // Drop the consensus eigenvalue: the one nearest 1 (W 1 = 1; a second eigenvalue
  // 1, from a disconnected graph, is kept and keeps the ratio from falling to 0).
  auto lambda = eigenvalues(W);
  const auto consensus = std::min_element(lambda.begin(), lambda.end(), [](const auto& a, const auto& b) {
    return std::abs(a - 1.0) < std::abs(b - 1.0);
  });
  lambda.erase(consensus);
  std::vector<double> power(lambda.size(), 1.0), squared(lambda.size());
  for (std::size_t k = 0; k < lambda.size(); ++k) squared[k] = std::norm(lambda[k]);
  for (std::size_t t = 1; t < ratio.size(); ++t) {
    double sum = 0.0;
    for (std::size_t k = 0; k < power.size(); ++k) sum += (power[k] *= squared[k]);
    ratio[t] = sum / static_cast<double>(n - 1);
  }
  return ratio;
}

}  // namespace avb
