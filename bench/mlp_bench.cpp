// One MLP training step against the matrix products it needs (issue 31's target:
// within 3x), one process, one thread:
//
//   build/bench/mlp_bench [--batch 32] [--hidden 128] [--repeats 400]
//
// The step is MlpObjective::stochastic_gradient on 784-pixel images in 10 classes
// (--objective mlp's work per local step, sgd/mlp.hpp). Its products, done with
// Eigen as the step does them, for a batch B, d pixels, h hidden units, K classes:
// the forward pass A W1 (B x d x h) and H W2 (B x h x K), and backpropagation's
// H^T R (h x B x K), R W2^T (B x K x h) and A^T D (d x B x h). The two alternate,
// so a busy machine slows both alike; each pair's ratio is kept and the median
// printed, with CPU times (this process's) as in kernels_bench:
//   RATIO mlp name=step batch=<B> hidden=<h> step_us=<> gemm_us=<> ratio=<gemm/step>
// The goal, within 3x, is ratio >= 1/3.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "core/rng.hpp"
#include "sgd/mlp.hpp"

namespace {

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

avb::ImageSet random_images(int m, int d, int classes) {
  const avb::Stream stream(1, avb::StreamId::test);
  avb::ImageSet out;
  out.classes = classes;
  out.pixels.resize(m, d);
  out.labels.resize(static_cast<std::size_t>(m));
  for (int s = 0; s < m; ++s) {
    out.labels[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>(stream.below(classes, 0, s, 0));
    for (int k = 0; k < d; ++k) out.pixels(s, k) = static_cast<std::uint8_t>(stream.below(256, 1, s, k));
  }
  return out;
}

// The step's five products on matrices of its shapes; returns a value so that
// none is optimised away.
struct Products {
  Eigen::MatrixXd a, w1, h, w2, r, d, g1, g2, back;
  Products(int batch, int pixels, int hidden, int classes)
      : a(Eigen::MatrixXd::Random(batch, pixels)), w1(Eigen::MatrixXd::Random(pixels, hidden)),
        h(batch, hidden), w2(Eigen::MatrixXd::Random(hidden, classes)), r(batch, classes),
        d(Eigen::MatrixXd::Random(batch, hidden)), g1(pixels, hidden), g2(hidden, classes), back(batch, hidden) {}
  double run() {
    h.noalias() = a * w1;
    r.noalias() = h * w2;
    g2.noalias() = h.transpose() * r;
    back.noalias() = r * w2.transpose();
    g1.noalias() = a.transpose() * d;
    return g1(0, 0) + g2(0, 0) + back(0, 0);
  }
};

int flag(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int batch = flag(argc, argv, "--batch", 32), hidden = flag(argc, argv, "--hidden", 128);
  const int repeats = std::max(1, flag(argc, argv, "--repeats", 400));
  constexpr int kPixels = 784, kClasses = 10, kImages = 2048;
  avb::ImageSet images = random_images(kImages, kPixels, kClasses);
  const avb::MlpShape shape{kPixels, hidden, kClasses};
  auto initial = std::make_shared<const Eigen::VectorXd>(avb::mlp_initial_model(shape, 3));
  const avb::MlpObjective f(std::move(images), Eigen::VectorXd::Constant(kImages, 1.0 / kImages), 1e-4, 0, hidden,
                            initial);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dim()), g(f.dim());
  Products products(batch, kPixels, hidden, kClasses);
  std::vector<double> ratios, steps, gemms;
  double sink = 0;
  for (int i = -repeats / 10; i < repeats; ++i) {  // the first tenth warms up
    const double t0 = cpu_seconds();
    f.stochastic_gradient(x, batch, 5, static_cast<std::uint64_t>(i + repeats), g);
    const double t1 = cpu_seconds();
    sink += products.run();
    const double t2 = cpu_seconds();
    sink += g[0];
    if (i < 0 || t1 <= t0 || t2 <= t1) continue;
    steps.push_back(t1 - t0);
    gemms.push_back(t2 - t1);
    ratios.push_back((t2 - t1) / (t1 - t0));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  std::printf("RATIO mlp name=step batch=%d hidden=%d step_us=%.2f gemm_us=%.2f ratio=%.4f\n", batch, hidden,
              1e6 * median(steps), 1e6 * median(gemms), median(ratios));
  return sink == 12345.678 ? 1 : 0;  // keeps sink alive; never that value in practice
}
