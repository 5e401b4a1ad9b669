// libFuzzer target: the bytes are a LIBSVM file, read with the dimension taken
// from the file and with a fixed one (as --test-data is). A bad file must end in
// avb::ConfigError; a file that is accepted must give labels in {-1, +1} and
// finite features (else the fuzzer stops on the trap below).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <Eigen/Dense>

#include "core/error.hpp"
#include "sgd/libsvm.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const int dim : {0, 8}) {
    std::istringstream in(text);
    try {
      const avb::Dataset set = avb::read_libsvm(in, "fuzz-input.txt", dim);
      if (set.samples() < 1 || set.labels.size() != set.samples() || (dim > 0 && set.dim() != dim)) __builtin_trap();
      for (Eigen::Index s = 0; s < set.labels.size(); ++s)
        if (set.labels[s] != 1.0 && set.labels[s] != -1.0) __builtin_trap();
      // Scanning a matrix near the 1 GiB bound takes longer than the fuzzer's 10 s
      // timeout in this instrumented build; the reader's own work on it does not.
      if (set.features.size() > (1 << 20)) continue;
      if (!set.features.allFinite()) __builtin_trap();
      (void)avb::accuracy(set, Eigen::VectorXd::Zero(set.dim()));
    } catch (const avb::ConfigError&) {
    }
  }
  return 0;
}
