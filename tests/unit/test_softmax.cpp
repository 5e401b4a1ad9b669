// --objective softmax: the IDX reader on good and broken files (written here,
// gzipped or not), the objective's gradient against finite differences and its
// stochastic gradient against the full one, the pooled f as the mean of the
// peers', sharding, accuracy of a known model, and the L-BFGS optimum.
#include <gtest/gtest.h>

#include "image_data.hpp"
#include "test_support.hpp"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sgd/idx.hpp"
#include "sgd/optimum.hpp"
#include "sgd/softmax.hpp"

namespace avb {
namespace {

using test::config_error;
using test::starts_with;
using Bytes = std::vector<std::uint8_t>;
using test::random_images;
using test::random_point;

void put_word(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}

Bytes images_file(std::uint32_t magic, std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                  const Bytes& pixels) {
  Bytes out;
  for (std::uint32_t v : {magic, count, rows, cols}) put_word(out, v);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

Bytes labels_file(std::uint32_t magic, std::uint32_t count, const Bytes& labels) {
  Bytes out;
  put_word(out, magic);
  put_word(out, count);
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// A pair of IDX files in a directory of their own, removed at the end.
class IdxPair {
 public:
  explicit IdxPair(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() / ("avb_softmax_" + std::to_string(::getpid()) + "_" + tag)) {
    std::filesystem::create_directories(dir_);
  }
  ~IdxPair() { std::filesystem::remove_all(dir_); }
  IdxPair(const IdxPair&) = delete;
  IdxPair& operator=(const IdxPair&) = delete;

  // Writes both files (gzipped when `gz`); returns the images file's path.
  std::string write(const Bytes& images, const Bytes& labels, bool gz = false) const {
    const std::string suffix = gz ? ".gz" : "";
    put(path("train-images-idx3-ubyte" + suffix), images, gz);
    put(path("train-labels-idx1-ubyte" + suffix), labels, gz);
    return path("train-images-idx3-ubyte" + suffix);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  static void put(const std::string& file, const Bytes& bytes, bool gz) {
    if (!gz) {
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                  static_cast<std::streamsize>(bytes.size()));
      return;
    }
    gzFile out = gzopen(file.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    ASSERT_EQ(gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(out);
  }
  std::filesystem::path dir_;
};

Bytes as_bytes(const ImageSet& data) { return Bytes(data.pixels.data(), data.pixels.data() + data.pixels.size()); }


TEST(IdxRead, ReadsGoodFilesGzippedOrNotAndKeepsTheFirstM) {
  const ImageSet want = random_images(12, 6, 4, 1);
  for (bool gz : {false, true}) {
    const IdxPair dir(gz ? "gz" : "plain");
    const std::string images = dir.write(images_file(kIdxImagesMagic, 12, 2, 3, as_bytes(want)),
                                         labels_file(kIdxLabelsMagic, 12, want.labels), gz);
    const ImageSet got = read_idx(images);
    EXPECT_EQ(got.samples(), 12);
    EXPECT_EQ(got.dim(), 6);
    EXPECT_EQ(got.classes, 4);
    EXPECT_EQ(got.pixels, want.pixels);
    EXPECT_EQ(got.labels, want.labels);
    const ImageSet first = read_idx(images, "--data", 5);
    EXPECT_EQ(first.samples(), 5);
    EXPECT_EQ(first.classes, 4);  // from every label, not the first five's
    EXPECT_EQ(first.pixels, want.pixels.topRows(5));
    const IdxShape shape = read_idx_shape(images);
    EXPECT_EQ(shape.samples, 12);
    EXPECT_EQ(shape.dim, 6);
    EXPECT_EQ(shape.classes, 4);
  }
}

TEST(IdxRead, AStopEndsTheReading) {
  const ImageSet want = random_images(12, 6, 4, 2);
  const IdxPair dir("stop");
  const std::string images =
      dir.write(images_file(kIdxImagesMagic, 12, 2, 3, as_bytes(want)), labels_file(kIdxLabelsMagic, 12, want.labels), true);
  std::atomic<bool> stop{true};
  EXPECT_THROW(read_idx(images, "--data", 0, &stop), StopRequested);
  stop = false;
  EXPECT_EQ(read_idx(images, "--data", 0, &stop).pixels, want.pixels);
}

TEST(IdxRead, RefusesBrokenFilesWithOneLineNamingTheFlag) {
  const ImageSet data = random_images(10, 4, 3, 2);
  const Bytes pixels = as_bytes(data);
  const Bytes good_labels = labels_file(kIdxLabelsMagic, 10, data.labels);
  const IdxPair dir("broken");
  auto error_of = [&](const Bytes& images, const Bytes& labels, const std::string& flag = "--data") {
    const std::string path = dir.write(images, labels);
    return config_error([&] { read_idx(path, flag); });
  };
  const std::string at = "--data " + dir.path("train-images-idx3-ubyte") + ": ";
  EXPECT_EQ(error_of(images_file(0x0803ff, 10, 2, 2, pixels), good_labels),
            at + "not an IDX images file (magic 0x000803ff, expected 0x00000803: unsigned bytes in 3 dimensions)");
  EXPECT_TRUE(starts_with(error_of(images_file(kIdxImagesMagic, 10, 2, 2, Bytes(pixels.begin(), pixels.end() - 5)),
                                   good_labels),
                          at + "truncated: the header announces 10 images of 2 x 2 pixels, the file ends in image 9"));
  const std::string labels_at = at + "its labels file " + dir.path("train-labels-idx1-ubyte") + ": ";
  EXPECT_EQ(error_of(images_file(kIdxImagesMagic, 10, 2, 2, pixels), labels_file(kIdxLabelsMagic, 9, data.labels)),
            labels_at + "holds 9 labels for 10 images");
  EXPECT_TRUE(starts_with(
      error_of(images_file(kIdxImagesMagic, 10, 2, 2, pixels), labels_file(kIdxImagesMagic, 10, data.labels)),
      labels_at + "not an IDX labels file (magic 0x00000803"));
  EXPECT_EQ(error_of(images_file(kIdxImagesMagic, 10, 2, 2, pixels), labels_file(kIdxLabelsMagic, 10, Bytes(10, 5))),
            labels_at + "every label is 5 (a softmax needs two classes or more)");
  EXPECT_EQ(error_of(images_file(kIdxImagesMagic, 10, 0, 2, pixels), good_labels),
            at + "images of 0 x 2 pixels (each side must be in [1, 32768])");
  Bytes longer = pixels;
  longer.push_back(0);
  EXPECT_EQ(error_of(images_file(kIdxImagesMagic, 10, 2, 2, longer), good_labels),
            at + "more bytes than the 10 images its header announces");
  EXPECT_EQ(error_of(Bytes{0, 0, 8}, good_labels), at + "the file ends inside its header (magic number)");
  EXPECT_EQ(error_of(images_file(kIdxImagesMagic, 1u << 30, 32, 32, {}), good_labels),
            at + "1073741824 images of 1024 pixels is more than 1073741824 pixels (1 GiB)");
  EXPECT_TRUE(starts_with(config_error([&] { read_idx(dir.path("none-images-idx3-ubyte"), "--test-data"); }),
                          "--test-data " + dir.path("none-images-idx3-ubyte") + ": cannot read the file"));
  EXPECT_TRUE(starts_with(config_error([&] { read_idx(dir.path("images.bin")); }),
                          "--data " + dir.path("images.bin") + ": the file name has no \"images-idx3\""));
}

TEST(SoftmaxObjective, GradientMatchesFiniteDifferencesAndLossIsTheMeanCrossEntropy) {
  ImageSet data = random_images(9, 5, 3, 3);
  Eigen::VectorXd weights(9);
  for (int s = 0; s < 9; ++s) weights[s] = (1.0 + s % 3) / 18.0;  // unequal, summing to 1
  const SoftmaxObjective f(data, weights, 0.05, 0);
  ASSERT_EQ(f.dim(), 3 * 6);
  EXPECT_NEAR(f.loss(Eigen::VectorXd::Zero(f.dim())), std::log(3.0), 1e-15);  // uniform over 3 classes
  const Eigen::VectorXd x = random_point(f.dim(), 4, 0.8);
  Eigen::VectorXd g(f.dim());
  EXPECT_DOUBLE_EQ(f.loss_and_gradient(x, g), f.loss(x));
  EXPECT_LT((g - test::numeric_gradient(f, x, 1e-5)).norm(), 1e-8 * g.norm());
  // Huge scores: no overflow (the largest score is taken out first).
  EXPECT_TRUE(std::isfinite(f.loss(x * 1e6)));
}

TEST(SoftmaxObjective, StochasticGradientIsKeyedAndUnbiased) {
  ImageSet data = random_images(7, 4, 3, 5);
  Eigen::VectorXd weights(7);
  for (int s = 0; s < 7; ++s) weights[s] = (1.0 + s % 2) / 10.0;
  const SoftmaxObjective f(data, weights, 0.1, 2);
  const Eigen::VectorXd x = random_point(f.dim(), 6, 0.5);
  test::expect_keyed_and_unbiased(f, x);
}

ObjectiveOptions softmax_options(DataSplit split) {
  ObjectiveOptions o;
  o.kind = ObjectiveKind::softmax;
  o.data_path = "unused.gz";
  o.split = split;
  return o;
}

TEST(SoftmaxShards, PeersGetTheirBlocksAndThePooledFIsTheirMean) {
  const ImageSet data = random_images(23, 4, 5, 7);
  for (DataSplit split : {DataSplit::random, DataSplit::sorted}) {
    const ObjectiveOptions o = softmax_options(split);
    constexpr int n = 4;
    const auto pooled_f = softmax_pooled(o, data, n, 31);
    EXPECT_DOUBLE_EQ(pooled_f->l2(), 1.0 / 23);
    const Eigen::VectorXd x = random_point(pooled_f->dim(), 8, 0.3);
    double mean_loss = 0.0;
    std::multiset<int> labels_seen;
    int previous_last_label = -1;
    for (int i = 0; i < n; ++i) {
      const auto peer = softmax_peer(o, data, i, n, 31);
      EXPECT_EQ(peer->samples().samples(), (i + 1) * 23 / n - i * 23 / n) << "peer " << i;
      EXPECT_EQ(peer->counter_peer(), static_cast<std::uint64_t>(i));
      mean_loss += peer->loss(x) / n;
      labels_seen.insert(peer->samples().labels.begin(), peer->samples().labels.end());
      if (split == DataSplit::sorted) {  // contiguous classes: each peer starts where the last one ended
        EXPECT_TRUE(std::is_sorted(peer->samples().labels.begin(), peer->samples().labels.end()));
        EXPECT_GE(peer->samples().labels.front(), previous_last_label);
        previous_last_label = peer->samples().labels.back();
      }
    }
    EXPECT_EQ(labels_seen, std::multiset<int>(data.labels.begin(), data.labels.end()));
    EXPECT_NEAR(pooled_f->loss(x), mean_loss, 1e-14);
  }
}

TEST(SoftmaxAccuracy, CountsArgmaxAgreementWithTiesToTheLowerClass) {
  ImageSet data;
  data.classes = 3;
  data.pixels = PixelMatrix::Zero(6, 3);
  data.labels = {0, 1, 2, 2, 1, 0};
  for (int s = 0; s < 6; ++s) data.pixels(s, data.labels[static_cast<std::size_t>(s)]) = 255;  // pixel c lit for class c
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3 * 4);
  EXPECT_DOUBLE_EQ(softmax_accuracy(data, x), 2.0 / 6);  // all ties: class 0 everywhere
  for (int c = 0; c < 3; ++c) x[c * 3 + c] = 1.0;        // w_c = e_c
  EXPECT_DOUBLE_EQ(softmax_accuracy(data, x), 1.0);
  x.tail(3) << 0.0, 0.0, 2.0;  // a bias that wins every image for class 2
  EXPECT_DOUBLE_EQ(softmax_accuracy(data, x), 2.0 / 6);
  EXPECT_THROW(softmax_accuracy(data, Eigen::VectorXd::Zero(5)), std::invalid_argument);
}

TEST(SoftmaxOptimum, LbfgsReachesTheToleranceAndBeatsPerturbedPoints) {
  const ImageSet data = random_images(60, 8, 4, 9);
  const auto f = softmax_pooled(softmax_options(DataSplit::random), data, 3, 5);
  const Optimum opt = softmax_optimum(*f);
  EXPECT_TRUE(opt.converged);
  EXPECT_GT(opt.iterations, 5);
  EXPECT_LE(opt.gradient_norm, kOptimumTolerance * opt.gradient_scale);
  EXPECT_DOUBLE_EQ(opt.gradient_scale, gradient_scale(*f, opt.x));
  Eigen::VectorXd g(f->dim());
  f->gradient(opt.x, g);
  EXPECT_EQ(g.norm(), opt.gradient_norm);
  EXPECT_EQ(f->loss(opt.x), opt.loss);
  for (std::uint64_t k = 0; k < 20; ++k) {
    const double scale = std::pow(10.0, -1.0 - static_cast<double>(k % 4));
    EXPECT_GT(f->loss(opt.x + random_point(f->dim(), 100 + k, scale)), opt.loss) << "perturbation " << k;
  }
  const Optimum few = softmax_optimum(*f, kOptimumTolerance, 3);
  EXPECT_FALSE(few.converged);
  EXPECT_EQ(few.iterations, 3);
  EXPECT_STREQ(optimum_method(ObjectiveKind::softmax), "lbfgs");
}

TEST(SoftmaxOptions, ResolveRefusesWhatCannotWork) {
  ObjectiveOptions o = softmax_options(DataSplit::random);
  o.data_path.clear();
  EXPECT_TRUE(starts_with(config_error([&] { resolve(o, 2); }), "--objective softmax: needs --data"));
  o.data_path = "x.gz";
  o.l2 = -1;
  EXPECT_TRUE(starts_with(config_error([&] { resolve(o, 2); }), "--l2: -1 is not a number >= 0"));
  o.l2 = 0;
  o.data_limit = 3;
  EXPECT_EQ(config_error([&] { resolve(o, 4); }), "--data-limit: 3 samples cannot be split across 4 peers");
  o.data_limit = -2;
  EXPECT_TRUE(starts_with(config_error([&] { resolve(o, 4); }), "--data-limit: -2 is not an integer >= 0"));
  o.data_limit = 0;
  o.l2 = 0.5;
  const auto described = describe(o);
  EXPECT_NE(std::find(described.begin(), described.end(), std::make_pair(std::string("l2"), std::string("0.5"))),
            described.end());
  EXPECT_DOUBLE_EQ(softmax_l2(o, 10), 0.5);
  o.l2 = 0;
  EXPECT_DOUBLE_EQ(softmax_l2(o, 10), 0.1);
}

}  // namespace
}  // namespace avb
