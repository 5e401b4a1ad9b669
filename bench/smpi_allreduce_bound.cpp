// Under SMPI (issue 8, item 2): the simulated time of the ring and the butterfly
// all-reduce against the alpha-beta cost of the platform they run on.
//
//   scripts/smpirun.sh -n N build-smpi/bench/smpi_allreduce_bound --platform XML [--sizes 1M,16M]
//
// XML is the platform smpirun runs on (scripts/avbench platform's default cluster:
// <cluster bw lat bb_bw bb_lat>). A message between two peers crosses the
// sender's up link, the backbone and the receiver's down link (split-duplex: a
// rank sends and receives at full rate at once; the backbone is shared by all),
// so its latency is alpha = 2 lat + bb_lat. SMPI's network model then multiplies,
// per message size m, the latency by smpi/lat-factor and the bandwidth by
// smpi/bw-factor (piecewise in m; for m >= 64 KiB x11.64 and x0.9407 by default),
// and caps one flow at network/TCP-gamma / (2 alpha); all three are read from the
// running configuration, so the bound uses the numbers the simulation uses. A
// step in which every rank sends b bytes in messages of m bytes costs
//   step(m, b) = lat_factor(m) alpha + max(b / bw, n b / bb_bw) / bw_factor(m)
// (the busiest resource: a rank's up link, or the backbone carrying n b), so
//   ring      T = 2(n-1) step(S/n, S/n)        = 2(n-1) alpha' + 2(n-1)/n S / B'
//   butterfly T = 2 step(S/n, (n-1) S/n)       = 2 alpha' + 2(n-1)/n S / B'
// (issue 8's ring bound with alpha' and B' the effective latency and bandwidth).
// Not modelled: SimGrid's cross-traffic (network/crosstraffic, on by default: each
// flow sends 5% of its size back, as TCP acknowledgements, which in a ring share
// every up link with the data). The ratio is T / simulated time: 1 means the
// algorithm runs exactly at the platform's alpha-beta cost. The simulated time
// runs from the last rank's start to the last rank's end (one global clock).
// A line per size first checks the model on one message (rank 0 to 1) alone.
// Prints, from rank 0:
//   RATIO smpi n=<n> bytes=<S> algo=<ring|butterfly> simulated=<s> bound=<s> ratio=<bound/simulated>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <xbt/config.hpp>

#include "core/comm.hpp"
#include "collectives/butterfly_allreduce.hpp"
#include "collectives/ring_allreduce.hpp"

namespace {

// "12.5MBps", "50us", ... in base units.
double quantity(const std::string& text) {
  const std::map<std::string, double> units = {
      {"Bps", 1.0}, {"kBps", 1e3}, {"KBps", 1e3}, {"MBps", 1e6}, {"GBps", 1e9}, {"TBps", 1e12},
      {"bps", 1.0 / 8}, {"kbps", 1e3 / 8}, {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8},
      {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  std::size_t used = 0;
  const double v = std::stod(text, &used);
  const std::string unit = text.substr(used);
  if (unit.empty()) return v;
  const auto u = units.find(unit);
  if (u == units.end()) throw std::runtime_error("unknown unit in '" + text + "'");
  return v * u->second;
}

std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const auto at = element.find(key);
  if (at == std::string::npos) throw std::runtime_error("the <cluster> element has no " + name);
  const auto begin = at + key.size();
  return element.substr(begin, element.find('"', begin) - begin);
}

struct Platform {
  double bw, lat, bb_bw, bb_lat;
};

Platform read_platform(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string xml = text.str();
  const auto at = xml.find("<cluster");
  if (at == std::string::npos)
    throw std::runtime_error(path + " has no <cluster> element (only the default cluster platform is modelled)");
  const std::string element = xml.substr(at, xml.find("/>", at) - at);
  return {quantity(attribute(element, "bw")), quantity(attribute(element, "lat")),
          quantity(attribute(element, "bb_bw")), quantity(attribute(element, "bb_lat"))};
}

// SimGrid's piecewise factor "t0:v0;t1:v1;..." : the value of the largest t <= size.
double factor(const std::string& spec, double size) {
  double best_threshold = -1, value = 1.0;
  std::stringstream parts(spec);
  std::string part;
  while (std::getline(parts, part, ';')) {
    const auto colon = part.find(':');
    if (colon == std::string::npos) continue;
    const double t = std::stod(part.substr(0, colon)), v = std::stod(part.substr(colon + 1));
    if (size >= t && t > best_threshold) best_threshold = t, value = v;
  }
  return value;
}

struct Model {
  Platform p;
  std::string bw_factor, lat_factor;
  double gamma;
  double alpha() const { return 2 * p.lat + p.bb_lat; }
  double alpha_eff(double m) const { return factor(lat_factor, m) * alpha(); }
  // A step in which each of n ranks sends `per_rank` bytes in messages of m bytes:
  // the busiest resource, a rank's up link or the shared backbone, at SMPI's
  // effective bandwidth; one flow is further capped at TCP-gamma / (2 alpha).
  double step(double m, double per_rank, int n) const {
    const double f = factor(bw_factor, m);
    double t = std::max(per_rank / p.bw, n * per_rank / p.bb_bw) / f;
    if (gamma > 0) t = std::max(t, m / (gamma / (2 * alpha())));
    return alpha_eff(m) + t;
  }
};

// Elapsed simulated time of a collective: from the last rank's start to the last
// rank's end (one global clock under SMPI; the last rank out of the barrier starts
// the collective, and the skew of the barrier's release, one small-message
// latency, ~1.2 ms here, is not the collective's).
double elapsed(const avb::Comm& timing, double start, double end) {
  double times[2] = {start, end}, last[2] = {0, 0};
  avb::check_mpi(MPI_Allreduce(times, last, 2, MPI_DOUBLE, MPI_MAX, timing.raw()), "MPI_Allreduce");
  return last[1] - last[0];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    avb::Comm comm = avb::Comm::duplicate(MPI_COMM_WORLD);
    avb::Comm timing = avb::Comm::duplicate(MPI_COMM_WORLD);
    std::string platform_path;
    std::vector<double> sizes = {1 << 20, 16 << 20};
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--platform" && i + 1 < argc) platform_path = argv[++i];
      else if (a == "--sizes" && i + 1 < argc) {
        sizes.clear();
        std::stringstream list(argv[++i]);
        std::string item;
        while (std::getline(list, item, ',')) {
          double scale = 1;
          if (!item.empty() && item.back() == 'K') scale = 1024, item.pop_back();
          else if (!item.empty() && item.back() == 'M') scale = 1 << 20, item.pop_back();
          sizes.push_back(std::stod(item) * scale);
        }
      } else throw std::runtime_error("unknown argument '" + a + "' (usage: --platform XML [--sizes 1M,16M])");
    }
    if (platform_path.empty()) throw std::runtime_error("--platform XML is required (the file smpirun runs on)");
    const Model model{read_platform(platform_path), simgrid::config::get_value<std::string>("smpi/bw-factor"),
                      simgrid::config::get_value<std::string>("smpi/lat-factor"),
                      simgrid::config::get_value<double>("network/TCP-gamma")};
    const int n = comm.size(), rank = comm.rank();
    if (rank == 0)
      std::printf("# platform %s: link %.4g B/s %.4g s, backbone %.4g B/s %.4g s; route alpha %.4g s; "
                  "network/model %s, network/crosstraffic %d, TCP-gamma %.4g\n",
                  platform_path.c_str(), model.p.bw, model.p.lat, model.p.bb_bw, model.p.bb_lat, model.alpha(),
                  simgrid::config::get_value<std::string>("network/model").c_str(),
                  static_cast<int>(simgrid::config::get_value<bool>("network/crosstraffic")), model.gamma);
    avb::RingAllreduce ring;
    avb::ButterflyAllreduce butterfly;
    for (double s : sizes) {
      const auto count = static_cast<std::size_t>(s / sizeof(double));
      const double bytes = static_cast<double>(count * sizeof(double));
      std::vector<double> x(count, 1.0 + rank);
      // Model check: one message of S/n bytes from rank 0 to rank 1, alone on the network.
      if (n >= 2) {
        const std::size_t m = count / static_cast<std::size_t>(n);
        timing.barrier();
        const double t0 = MPI_Wtime();
        if (rank == 0) MPI_Send(x.data(), static_cast<int>(m), MPI_DOUBLE, 1, 5, timing.raw());
        if (rank == 1) MPI_Recv(x.data(), static_cast<int>(m), MPI_DOUBLE, 0, 5, timing.raw(), MPI_STATUS_IGNORE);
        const double one = elapsed(timing, rank <= 1 ? t0 : 0.0, rank <= 1 ? MPI_Wtime() : 0.0);
        const double mb = static_cast<double>(m * sizeof(double));
        const double predicted = model.step(mb, mb, 1);
        if (rank == 0)
          std::printf("# one message of %.0f bytes: simulated %.6g s, model %.6g s (lat x%.4g, bw x%.4g)\n", mb, one,
                      predicted, factor(model.lat_factor, mb), factor(model.bw_factor, mb));
      }
      const double m = bytes / n;
      // Ring: 2(n-1) steps, each rank sends one chunk of S/n per step.
      const double ring_bound = 2.0 * (n - 1) * model.step(m, m, n);
      // Butterfly: 2 steps, each rank sends n-1 parts of S/n at once.
      const double butterfly_bound = 2.0 * model.step(m, (n - 1) * m, n);
      for (const char* algo : {"ring", "butterfly"}) {
        std::fill(x.begin(), x.end(), 1.0 + rank);
        timing.barrier();
        const double t0 = MPI_Wtime();
        if (std::string(algo) == "ring") ring.sum(comm, x);
        else butterfly.average(comm, x);
        const double simulated = elapsed(timing, t0, MPI_Wtime());
        const double bound = std::string(algo) == "ring" ? ring_bound : butterfly_bound;
        if (rank == 0)
          std::printf("RATIO smpi n=%d bytes=%.0f algo=%s simulated=%.6g bound=%.6g ratio=%.4f\n", n, bytes, algo,
                      simulated, bound, bound / simulated);
      }
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "smpi_allreduce_bound: error: %s\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
