// Spectra of mixing matrices and graph Laplacians, for checking gossip protocols
// against theory: synchronous x <- W x contracts the spread like rho^t, rho the
// second-largest |eigenvalue| of W, and the Laplacian's algebraic connectivity
// bounds how fast any diffusion on the graph can mix.
//
// Dense linear algebra: fine up to a few thousand peers. Circulant matrices (ring,
// exp, one-peer-exp rounds, complete) are diagonalised by the discrete Fourier
// transform of their first row instead, which is O(N * nonzeros per row).
#pragma once

#include <complex>
#include <vector>

#include <Eigen/Dense>

#include "sim/topology.hpp"

namespace avb {

// The dense N x N mixing matrix of round t: W(i, j) = weight of x_j in peer i's
// new value (rows from Topology::mixing_row). Throws ConfigError as mixing_row does.
Eigen::MatrixXd mixing_matrix(const Topology& topology, Weights weights, int t);

// All eigenvalues of a square matrix, in no particular order: by DFT when W is
// circulant (W(i, j) depends only on (j - i) mod N), by a symmetric solver when W
// is symmetric, by the general (Hessenberg-QR) solver otherwise.
std::vector<std::complex<double>> eigenvalues(const Eigen::MatrixXd& W);

// The second-largest modulus among W's eigenvalues (0 for N < 2). For a
// stochastic W the largest is 1, so this is the consensus rate rho.
double second_largest_modulus(const Eigen::MatrixXd& W);

// Algebraic connectivity: the second-smallest eigenvalue of L = D - A for the
// undirected graph of round 1 (Topology::edges(1)). 0 for one peer.
double laplacian_lambda2(const Topology& topology);

// Element t (0 .. rounds) is E[var_t] / E[var_0] for i.i.d. initial values under
// x <- W x on a static graph, var the spread around the mean:
//   sum over the eigenvalues lambda_k of W other than the consensus eigenvalue 1
//   of |lambda_k|^(2t), divided by N - 1.
// Exact when W is normal (symmetric, or circulant); throws ConfigError for a
// time-varying graph or a W that is not normal (e.g. uniform weights on a
// non-regular file graph). Element 0 is 1; for one peer the rest are 0.
std::vector<double> predicted_variance_ratio(const Topology& topology, Weights weights, int rounds);

}  // namespace avb
