// Kernels (issue 8, item 3), one process, Google Benchmark:
//   - the collectives' element-wise kernels (core/reduce.hpp) against memcpy;
//   - every quantizer's encode and decode, in GB/s of input doubles.
//
//   build/bench/kernels_bench [--benchmark_* flags]
//
// Bytes are counted as bytes touched: what the kernel reads plus what it writes
// (not counting the cache's write-allocate reads), for the kernels and memcpy
// alike. Per destination double: memcpy touches 16 bytes (read 8, write 8),
// add_into 24 (read x and y, write x), divide_by 16, sum_divide over k inputs
// 8(k+1). Each comparison uses the same bytes touched: at footprint F (512 KiB:
// in L2; 8 MiB: in L3; 128 MiB: in memory) the kernel runs on F / (bytes per
// double) doubles and memcpy copies F/2 bytes, so the ratio, touched bytes/s of
// the kernel over memcpy's, is t_memcpy / t_kernel. Quantizers: 8 bytes per input
// double over the time of one encode (or one decode) of d doubles.
// Times are CPU times (this process's), not wall time: the machine is shared, and
// "per core" means per second the core actually ran this code; Google Benchmark's
// own bytes_per_second column is CPU-time based too.
// After Google Benchmark's table the program prints one line per comparison:
//   RATIO kernel name=<k> bytes=<F> GBps=<touched GB/s> memcpy_GBps=<> ratio=<>
//   RATIO quantizer name=<q>/<encode|decode> bytes=<8d> GBps=<input GB/s>
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/reduce.hpp"
#include "codecs/compress.hpp"

namespace {

// Footprints (bytes touched per call): in L2, in L3, in memory.
const std::vector<std::size_t> kFootprints = {std::size_t{512} << 10, std::size_t{8} << 20, std::size_t{128} << 20};
// Bytes touched per destination double.
const std::map<std::string, std::size_t> kTouched = {{"memcpy", 16},         {"add_into", 24},    {"divide_by_pow2", 16},
                                                     {"divide_by", 16},      {"sum_divide4", 40}, {"sum_divide3", 32}};
int64_t doubles_for(const std::string& kernel, std::size_t footprint) {
  return static_cast<int64_t>(footprint / kTouched.at(kernel));
}

std::vector<double> values(std::size_t m, double offset) {
  std::vector<double> v(m);
  for (std::size_t k = 0; k < m; ++k) v[k] = offset + std::sin(0.001 * static_cast<double>(k));
  return v;
}

// Times `kernel` once per iteration, keeping what it returns alive, and counts
// `bytes_per_double` bytes for each of the state.range(0) doubles.
template <class Kernel>
void measure(benchmark::State& state, std::size_t bytes_per_double, Kernel kernel) {
  const auto m = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(kernel());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * m * bytes_per_double));
}

void BM_memcpy(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  auto a = values(m, 1.0), b = values(m, 2.0);
  measure(state, kTouched.at("memcpy"), [&] { return std::memcpy(a.data(), b.data(), m * sizeof(double)); });
}

void BM_add_into(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  auto a = values(m, 1.0), b = values(m, 0.0);
  measure(state, kTouched.at("add_into"), [&] {
    avb::add_into(a, b);
    return a.data();
  });
}

// divide_by with a power of two (1: multiplies, the values stay the same) and with
// the next double above 1 (divides; the values shrink by 2^-52 per call, never
// reaching the slow subnormals).
void BM_divide_by(benchmark::State& state, double d) {
  auto a = values(static_cast<std::size_t>(state.range(0)), 1.0);
  measure(state, kTouched.at("divide_by"), [&] {
    avb::divide_by(a, d);
    return a.data();
  });
}

// The butterfly's reduction of a part over `inputs` members (divides by a power
// of two for 4, by 3 for 3).
void BM_sum_divide(benchmark::State& state, int inputs) {
  const auto m = static_cast<std::size_t>(state.range(0));
  std::vector<std::vector<double>> in;
  std::vector<const double*> ptrs;
  for (int i = 0; i < inputs; ++i) in.push_back(values(m, i));
  for (const auto& v : in) ptrs.push_back(v.data());
  std::vector<double> out(m);
  measure(state, kTouched.at("sum_divide" + std::to_string(inputs)), [&] {
    avb::sum_divide(ptrs, m, static_cast<double>(inputs), out.data());
    return out.data();
  });
}

const std::map<std::string, avb::QuantizerSpec> kQuantizers = {
    {"none", avb::parse_quantizer("none")},
    {"fp16", avb::parse_quantizer("fp16")},
    {"uniform8", avb::parse_quantizer("uniform8")},
    {"stochastic:4", avb::parse_quantizer("stochastic:4")},
    {"stochastic:8", avb::parse_quantizer("stochastic:8")},
    {"lattice", avb::parse_quantizer("lattice")},
};

void BM_encode(benchmark::State& state, avb::QuantizerSpec spec) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const avb::Quantizer q(spec);
  const auto x = values(d, 0.5);
  std::vector<std::byte> out;
  avb::EncodeContext context{7, 1, 0, 0};
  measure(state, 8, [&] {
    q.encode(x, context, out);
    return out.data();
  });
}

void BM_decode(benchmark::State& state, avb::QuantizerSpec spec) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const avb::Quantizer q(spec);
  const auto x = values(d, 0.5);
  const auto reference = values(d, 0.5001);  // lattice decodes near the receiver's own vector
  std::vector<std::byte> wire;
  q.encode(x, avb::EncodeContext{7, 1, 0, 0}, wire);
  std::vector<double> out(d);
  measure(state, 8, [&] { return q.decode(wire, reference, out); });
}

// Collects every run's time per iteration for the ratio lines.
class Collect : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && !r.error_occurred)
        seconds[r.benchmark_name()] = r.GetAdjustedCPUTime() / 1e9;  // ns per iteration (kNanosecond)
  }
  std::map<std::string, double> seconds;
};

}  // namespace

int main(int argc, char** argv) {
  for (std::size_t f : kFootprints) {
    benchmark::RegisterBenchmark("memcpy", BM_memcpy)->Arg(doubles_for("memcpy", f));
    benchmark::RegisterBenchmark("add_into", BM_add_into)->Arg(doubles_for("add_into", f));
    benchmark::RegisterBenchmark("divide_by_pow2", BM_divide_by, 1.0)->Arg(doubles_for("divide_by_pow2", f));
    benchmark::RegisterBenchmark("divide_by", BM_divide_by, std::nextafter(1.0, 2.0))->Arg(doubles_for("divide_by", f));
    benchmark::RegisterBenchmark("sum_divide4", BM_sum_divide, 4)->Arg(doubles_for("sum_divide4", f));
    benchmark::RegisterBenchmark("sum_divide3", BM_sum_divide, 3)->Arg(doubles_for("sum_divide3", f));
  }
  // Quantizers on 1 Mi doubles (8 MiB in, in L3) and 64 Ki (512 KiB, in L2).
  const std::vector<std::size_t> dims = {std::size_t{1} << 16, std::size_t{1} << 20};
  for (const auto& [name, spec] : kQuantizers)
    for (std::size_t d : dims) {
      benchmark::RegisterBenchmark(("encode/" + name).c_str(), BM_encode, spec)->Arg(static_cast<int64_t>(d));
      benchmark::RegisterBenchmark(("decode/" + name).c_str(), BM_decode, spec)->Arg(static_cast<int64_t>(d));
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  Collect reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& s = reporter.seconds;
  for (std::size_t f : kFootprints) {
    const auto copy = s.find("memcpy/" + std::to_string(doubles_for("memcpy", f)));
    if (copy == s.end()) continue;
    for (const auto& [kernel, bytes] : kTouched) {
      if (kernel == "memcpy") continue;
      const auto t = s.find(kernel + "/" + std::to_string(doubles_for(kernel, f)));
      if (t == s.end()) continue;
      std::printf("RATIO kernel name=%s bytes=%zu GBps=%.3f memcpy_GBps=%.3f ratio=%.4f\n", kernel.c_str(), f,
                  static_cast<double>(f) / t->second / 1e9, static_cast<double>(f) / copy->second / 1e9,
                  copy->second / t->second);
    }
  }
  for (const auto& [name, spec] : kQuantizers)
    for (std::size_t d : dims)
      for (const char* op : {"encode", "decode"}) {
        const auto t = s.find(std::string(op) + "/" + name + "/" + std::to_string(d));
        if (t == s.end()) continue;
        std::printf("RATIO quantizer name=%s/%s bytes=%zu GBps=%.3f\n", name.c_str(), op, d * 8,
                    8.0 * static_cast<double>(d) / t->second / 1e9);
      }
  benchmark::Shutdown();
  return 0;
}
