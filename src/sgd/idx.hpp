// Labelled images in the IDX format of MNIST and Fashion-MNIST (an images file
// and its labels file, gzipped or not), for --objective softmax.
//
// Pixels stay bytes in memory (Fashion-MNIST's 60,000 x 784 is 47 MB, not the
// 376 MB of doubles): the objective scales them to [0, 1] block by block when it
// uses them.
#pragma once

#include <Eigen/Dense>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace avb {

using PixelMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// m images of d pixels, with labels in [0, classes).
struct ImageSet {
  PixelMatrix pixels;                // m x d, one image per row
  std::vector<std::uint8_t> labels;  // m entries
  int classes = 0;                   // the labels file's largest label + 1

  int samples() const { return static_cast<int>(pixels.rows()); }
  int dim() const { return static_cast<int>(pixels.cols()); }
  Eigen::VectorXd label_values() const;  // the labels as doubles (for shard_rows' order)
};

// A pixel byte as a feature: p / 255.
inline constexpr double kPixelScale = 1.0 / 255.0;

// The IDX magic numbers: unsigned bytes, 3 dimensions (images) or 1 (labels).
inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;
// Most pixels a file may hold (1 GiB of bytes): Fashion-MNIST's 47 million fit.
inline constexpr long long kMaxIdxPixels = 1LL << 30;

// The labels file of an images file: the same path with "images-idx3" in the
// file name replaced by "labels-idx1". ConfigError ("FLAG PATH: ...") when the
// name has no "images-idx3".
std::string idx_labels_path(const std::string& images_path, const std::string& flag = "--data");

// The sizes of an IDX pair, from the images file's header and the whole labels
// file (small): what the run's estimate needs before the pixels are read.
struct IdxShape {
  long long samples = 0;
  int dim = 0;
  int classes = 0;
};
IdxShape read_idx_shape(const std::string& images_path, const std::string& flag = "--data");

// Reads images_path and its labels file (idx_labels_path), gzipped or not; limit
// > 0 keeps the first `limit` images. Checks the magic numbers, the dimensions,
// that both files hold the same count (and no more bytes than announced), and
// that there are at least two classes. Errors are one-line ConfigErrors naming
// the flag and the file: "--data PATH: not an IDX images file (magic 0x...)".
// `stop` (null: never) is polled between chunks of pixels: StopRequested.
ImageSet read_idx(const std::string& images_path, const std::string& flag = "--data", long long limit = 0,
                  const std::atomic<bool>* stop = nullptr);

// The rows in `rows`' order.
ImageSet select_images(const ImageSet& data, const std::vector<int>& rows);

// One message of a shard: its labels, then its pixels, row by row.
std::vector<std::uint8_t> pack_images(const ImageSet& data);
ImageSet unpack_images(const std::vector<std::uint8_t>& bytes, int dim, int classes);

}  // namespace avb
