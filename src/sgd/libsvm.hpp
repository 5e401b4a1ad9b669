// Labelled data sets for binary classification, and the LIBSVM text reader.
//
// Storage is dense (a9a has 123 features, w8a 300) and row-major, because a
// minibatch touches a few whole samples at a time.
#pragma once

#include <Eigen/Dense>

#include <atomic>
#include <iosfwd>
#include <string>

namespace avb {

using SampleMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// m samples of dimension d with labels in {-1, +1}.
struct Dataset {
  SampleMatrix features;   // m x d, one sample per row
  Eigen::VectorXd labels;  // m entries, each -1.0 or +1.0

  int samples() const { return static_cast<int>(features.rows()); }
  int dim() const { return static_cast<int>(features.cols()); }
};

// Reads "label idx:val ..." lines (1-based increasing indices, '#' starts a
// comment). Labels > 0 become +1, others -1, so +1/-1 and 1/0 files both work.
// dim = 0 takes the largest index; dim > 0 fixes it, since a test file may lack
// its training file's last features. Errors are one-line ConfigErrors naming the
// flag (--data unless told), file and line: "--data PATH: line L: ...".
// Dense storage is bounded (max_dense_values) so that a stray huge index cannot ask
// for terabytes: the error says how large the matrix would be. `stop` (null:
// never) is polled every 4096 lines: a large file takes seconds to read, and a
// run's set-up honours a signal within one (throws StopRequested, core/error.hpp).
Dataset read_libsvm(const std::string& path, int dim = 0, const std::string& flag = "--data",
                    const std::atomic<bool>* stop = nullptr);
// The same from a stream; `path` only names it in errors (the fuzzer feeds bytes).
Dataset read_libsvm(std::istream& in, const std::string& path, int dim = 0, const std::string& flag = "--data",
                    const std::atomic<bool>* stop = nullptr);

// A file's dense shape without its values: samples, and features (the largest
// index, or dim > 0), after the same checks as read_libsvm's, with the same
// errors. A run's estimate reads it before the problem is built; `stop` as
// read_libsvm's.
struct LibsvmShape {
  long long samples = 0, dim = 0;
};
LibsvmShape read_libsvm_shape(const std::string& path, int dim = 0, const std::string& flag = "--data",
                              const std::atomic<bool>* stop = nullptr);

// The first `limit` samples of `data` (all of them for limit <= 0): --data-limit.
Dataset keep_first(Dataset data, long long limit);

// Most samples x features a data set may hold (2^27 doubles, 1 GiB): far above
// a9a (4e6) or w8a (1.5e7), far below what one test machine can hold per peer.
inline constexpr long long max_dense_values = 1LL << 27;

// Fraction of samples with label sign(a^T x); sign(0) = -1, so that the zero
// model scores the share of negatives rather than a free 100%.
double accuracy(const Dataset& data, const Eigen::Ref<const Eigen::VectorXd>& x);

}  // namespace avb
