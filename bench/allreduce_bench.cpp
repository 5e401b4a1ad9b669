// Ring and butterfly all-reduce against MPI_Allreduce on the same communicator
// (issue 8, item 1), with Google Benchmark as the harness.
//
//   mpirun -n 4 build/bench/allreduce_bench [--min-bytes B] [--max-bytes B]
//          [--segment DOUBLES] [--budget BYTES] [--benchmark_* flags]
//
// Every rank runs the same benchmarks with the same fixed iteration counts (Google
// Benchmark would otherwise choose them per process, and ranks would call different
// numbers of collectives). One benchmark per size; one iteration calls each
// algorithm once, in rotated order (paired measurements under the same load). One
// call: refill the vector (untimed), barrier, time the collective, and take the
// maximum elapsed time over the ranks (MPI_Allreduce MAX on a separate
// communicator). Per algorithm, the median over the iterations.
// Bandwidths follow the nccl-tests convention: algbw = S / t, busbw = algbw *
// 2(n-1)/n, the bytes each rank must send per byte of S. Rank 0 prints Google
// Benchmark's table, then one line per size and algorithm:
//   RATIO allreduce n=<n> bytes=<S> algo=<a> busbw=<GB/s> mpi_busbw=<GB/s> ratio=<ours/mpi> q1=<> q3=<>
// (busbw from the median times; ratio, q1, q3: median and quartiles of the
// paired per-iteration ratios).
// Ours: RingAllreduce::sum (segmented, and with one message per chunk), and
// ButterflyAllreduce::average (it has no plain sum; the division is one extra pass
// over S/n). MPI: MPI_Allreduce(MPI_SUM, MPI_DOUBLE), in place.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "collectives/butterfly_allreduce.hpp"
#include "collectives/ring_allreduce.hpp"

namespace {

enum class Algo { mpi, ring, ring_unsegmented, butterfly };
constexpr std::size_t kAlgos = 4;
const char* name_of(Algo a) {
  switch (a) {
    case Algo::mpi: return "mpi";
    case Algo::ring: return "ring";
    case Algo::ring_unsegmented: return "ring-unsegmented";
    case Algo::butterfly: return "butterfly";
  }
  return "?";
}

struct Settings {
  std::size_t min_bytes = 8 << 10;
  std::size_t max_bytes = 64 << 20;
  std::size_t segment = avb::RingAllreduce::kDefaultSegment;
  double budget = 128.0 * (1 << 20);  // bytes all-reduced per benchmark: sets the iterations
  int max_iterations = 400;
};

struct Result {
  double seconds[kAlgos] = {};  // median time per call (max over ranks)
  double busbw[kAlgos] = {};    // GB/s
  double ratio[kAlgos] = {};                // median of t_mpi / t_algo over the iterations
  double q1[kAlgos] = {}, q3[kAlgos] = {};  // its quartiles
};

// This rank's state (one process per rank: Open MPI; not meant for SMPI, where
// bench/smpi_allreduce_bound.cpp measures simulated time instead).
struct Bench {
  avb::Comm comm = avb::Comm::duplicate(MPI_COMM_WORLD);    // the collectives run here
  avb::Comm timing = avb::Comm::duplicate(MPI_COMM_WORLD);  // barriers and the MAX of the times
  Settings settings;
  avb::RingAllreduce ring;
  avb::RingAllreduce ring_unsegmented{0};
  avb::ButterflyAllreduce butterfly;
  std::vector<double> x;
  std::map<std::size_t, Result> results;  // per size
};


void fill(std::vector<double>& x, int rank) {
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = 1.0 + 1e-3 * static_cast<double>((k + static_cast<std::size_t>(rank)) % 97);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// One call of `algo` on c.x (refilled first, untimed), timed as the maximum over
// the ranks of the elapsed time between a barrier and the call's return.
double time_one(Bench& c, Algo algo) {
  const std::size_t count = c.x.size();
  fill(c.x, c.comm.rank());  // every call starts from the same values
  c.timing.barrier();
  const double t0 = MPI_Wtime();
  switch (algo) {
    case Algo::mpi:
      avb::check_mpi(MPI_Allreduce(MPI_IN_PLACE, c.x.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM,
                                   c.comm.raw()),
                     "MPI_Allreduce");
      break;
    case Algo::ring: c.ring.sum(c.comm, c.x); break;
    case Algo::ring_unsegmented: c.ring_unsegmented.sum(c.comm, c.x); break;
    case Algo::butterfly: c.butterfly.average(c.comm, c.x); break;
  }
  double elapsed = MPI_Wtime() - t0, slowest = 0.0;
  avb::check_mpi(MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, c.timing.raw()), "MPI_Allreduce");
  return slowest;
}

// One benchmark per size. Each iteration calls every algorithm once, in an order
// rotated from one iteration to the next, so that all of them see the same
// machine load (2 cores shared with other jobs: the load moves within seconds,
// and algorithms timed one after the other would compare different machines).
// Per algorithm the median time over the iterations gives its bandwidth; the
// ratio is the median over the iterations of the paired ratio t_mpi / t_ours (=
// busbw ours / busbw MPI), its spread the quartiles of those paired ratios.
void run_size(benchmark::State& state, Bench& c, std::size_t bytes) {
  c.x.resize(bytes / sizeof(double));
  std::vector<double> times[kAlgos];
  std::size_t turn = 0;
  for (auto _ : state) {
    double sum = 0.0;
    for (std::size_t k = 0; k < kAlgos; ++k) {
      const std::size_t a = (turn + k) % kAlgos;
      const double t = time_one(c, static_cast<Algo>(a));
      times[a].push_back(t);
      sum += t;
    }
    ++turn;
    state.SetIterationTime(sum);
  }
  const int n = c.comm.size();
  const double bus = 2.0 * (n - 1) / n;
  Result& r = c.results[bytes];
  for (std::size_t a = 0; a < kAlgos; ++a) {
    r.seconds[a] = median(times[a]);
    r.busbw[a] = static_cast<double>(bytes) / r.seconds[a] / 1e9 * bus;
    state.counters[std::string(name_of(static_cast<Algo>(a))) + "_busbw"] = r.busbw[a];
    if (a == static_cast<std::size_t>(Algo::mpi)) continue;
    std::vector<double> ratios;
    for (std::size_t i = 0; i < times[a].size(); ++i) ratios.push_back(times[0][i] / times[a][i]);
    std::sort(ratios.begin(), ratios.end());
    r.ratio[a] = median(ratios);
    r.q1[a] = ratios[ratios.size() / 4];
    r.q3[a] = ratios[(3 * ratios.size()) / 4];
  }
}

// Discards everything: ranks other than 0 run the same benchmarks silently.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

std::size_t parse_bytes(const char* flag, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  double scale = 1.0;
  if (end && *end) {
    const std::string unit(end);
    if (unit == "K" || unit == "KiB") scale = 1024.0;
    else if (unit == "M" || unit == "MiB") scale = 1024.0 * 1024.0;
    else if (unit == "G" || unit == "GiB") scale = 1024.0 * 1024.0 * 1024.0;
    else {
      std::fprintf(stderr, "allreduce_bench: %s: '%s' is not a size (e.g. 8K, 64M)\n", flag, text);
      std::exit(2);
    }
  }
  if (!(v > 0)) {
    std::fprintf(stderr, "allreduce_bench: %s: '%s' is not a positive size\n", flag, text);
    std::exit(2);
  }
  return static_cast<std::size_t>(v * scale);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    Bench c;
    // Our flags first; the rest (--benchmark_*) go to Google Benchmark.
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const bool has_value = i + 1 < argc;
      if (a == "--min-bytes" && has_value) c.settings.min_bytes = parse_bytes("--min-bytes", argv[++i]);
      else if (a == "--max-bytes" && has_value) c.settings.max_bytes = parse_bytes("--max-bytes", argv[++i]);
      else if (a == "--budget" && has_value) c.settings.budget = static_cast<double>(parse_bytes("--budget", argv[++i]));
      else if (a == "--max-iterations" && has_value) c.settings.max_iterations = std::atoi(argv[++i]);
      else if (a == "--segment" && has_value) c.ring = avb::RingAllreduce(std::strtoull(argv[++i], nullptr, 10));
      else rest.push_back(argv[i]);
    }
    int rest_count = static_cast<int>(rest.size());
    benchmark::Initialize(&rest_count, rest.data());
    const int n = c.comm.size();
    std::vector<std::size_t> sizes;
    for (std::size_t s = c.settings.min_bytes; s <= c.settings.max_bytes; s *= 2) sizes.push_back(s);
    for (std::size_t bytes : sizes) {
      // Fixed on every rank: the same number of collective calls everywhere.
      const auto iterations = static_cast<benchmark::IterationCount>(std::clamp(
          c.settings.budget / static_cast<double>(bytes), 5.0, static_cast<double>(c.settings.max_iterations)));
      const std::string name = "allreduce/n=" + std::to_string(n) + "/" + std::to_string(bytes);
      benchmark::RegisterBenchmark(name.c_str(), [&c, bytes](benchmark::State& s) { run_size(s, c, bytes); })
          ->UseManualTime()
          ->Iterations(iterations)
          ->Unit(benchmark::kMicrosecond);
    }
    if (c.comm.rank() == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      Silent silent;
      benchmark::RunSpecifiedBenchmarks(&silent);
    }
    if (c.comm.rank() == 0) {
      for (const auto& [bytes, r] : c.results)
        for (Algo a : {Algo::ring, Algo::ring_unsegmented, Algo::butterfly}) {
          const auto i = static_cast<std::size_t>(a);
          std::printf("RATIO allreduce n=%d bytes=%zu algo=%s busbw=%.4f mpi_busbw=%.4f ratio=%.4f q1=%.4f q3=%.4f\n",
                      n, bytes, name_of(a), r.busbw[i], r.busbw[0], r.ratio[i], r.q1[i], r.q3[i]);
        }
      std::fflush(stdout);
    }
    benchmark::Shutdown();
  }
  MPI_Finalize();
  return status;
}
