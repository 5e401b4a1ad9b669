#include "run/estimate.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "core/error.hpp"
#include "protocols/link_loads.hpp"
#include "sim/compute.hpp"
#include "trace/trace.hpp"

namespace avb {

namespace {

// What a stored neighbour list and one of its entries cost, allocation headers
// and the graph builders' temporaries included (calibrated by test_estimate's
// measurements of peak memory).
constexpr double kListBytes = 96, kEntryBytes = 16;
// The program itself (code, libraries, HDF5, MPI): not counted against the run.
constexpr double kProgramBytes = 64e6;
// Under ulimit -v every mapping counts, reserved or not: each thread's stack and
// malloc arena (glibc reserves up to 128 MB of address space per arena).
constexpr double kThreadAddressSpace = 136e6;

// The address space mapped now (/proc/self/statm's first field), or the program's
// usual size where it cannot be read.
double mapped_now() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return kProgramBytes;
  unsigned long long pages = 0;
  const bool read = std::fscanf(f, "%llu", &pages) == 1;
  std::fclose(f);
  const long page = ::sysconf(_SC_PAGESIZE);
  return read && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : kProgramBytes;
}

std::string gigabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g GB", bytes / 1e9);
  return text;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

// The sequential engine's wall time, about.
double wall_seconds(const ProtocolResources& r, const RunShape& s, const PlatformModel& link, const GraphFootprint& graph) {
  const double n = s.peers, dim = static_cast<double>(s.dim);
  // About 6 ns per unit of work (measured on the protocols at a million peers),
  // the initial values' normal draws, the graph's construction, and 15 us of
  // setting a trial up and reporting it (what 20,000 trials of 4 peers and 3
  // rounds take). Trials run on at most as many threads as there are cores; the
  // trace is written by one.
  const double per_trial = n * s.rounds * (r.work_per_peer + 2 * dim + 8) * 6e-9 + n * dim * 40e-9 +
                           graph.build_work * 60e-9 + 15e-6 + s.workload_trial_seconds;
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int parallel = std::max(1, std::min({s.threads, s.trials, cores}));
  // The trace appends trials to one table in batches: a trial costs its rows'
  // bytes, copied and written, and a few microseconds of its summary row.
  const double traced = s.traced ? s.trials * (5e-6 + (s.rounds + 1) * 12 * 8 * 5e-9) : 0.0;
  // The rounds simulated flow by flow. Hosts alike: about 3 us a message in a
  // trial's first round and 1 us in each later one, whose flows repeat an earlier
  // round's (a lookup in the fluid memo) or start from the clocks it left. Hosts
  // of unequal speeds or bandwidths: their flows end one by one, each end touching
  // every flow still moving, so a message costs about 0.5 us times the square root
  // of those moving at once, in every round. (Fitted to rings of 64 to 256 peers
  // on cluster and cloud and recursive doubling of 1,024 to 4,096 peers: each
  // took 0.15 to 0.75 of this estimate.)
  const LinkLoads::Simulated simulated = LinkLoads::simulated(link, r.pattern, s.peers, s.failures);
  const double simulation =
      link.bandwidths_vary() || link.speeds_vary()
          ? simulated.messages * s.rounds * std::max(3e-6, 0.5e-6 * std::sqrt(simulated.at_once))
          : simulated.messages * (3e-6 + std::max(0.0, s.rounds - 1.0) * 1e-6);
  return s.setup_seconds + (per_trial + simulation) * s.trials / parallel + traced;
}

}  // namespace

RunEstimate estimate_run(const ProtocolOptions& protocol, const RunShape& s, const PlatformModel& link) {
  const ResourceQuery query{s.peers, s.dim, std::max(s.model_dim, s.dim)};
  const ProtocolResources r = protocol_resources(protocol, query);
  const double n = s.peers, dim = static_cast<double>(s.dim), model = static_cast<double>(query.model_dim);
  const double vector = 8 * dim;
  RunEstimate e;
  const GraphFootprint graph = protocol.topology ? graph_footprint(*protocol.topology, s.peers) : GraphFootprint{};
  const double graph_bytes = graph.lists * kListBytes + graph.entries * kEntryBytes;
  const std::string size_flag = s.dim > 1 && !s.dim_flag.empty() ? s.dim_flag : "--peers";
  // Trials stream: at most two per thread wait to be reported (run/trial_pool.hpp),
  // each with its rows; the reporters keep running sums only.
  const double in_flight = s.sequential ? std::min(s.trials, 2 * std::max(1, s.threads) + 1) : 1;
  const double records = in_flight * (s.rounds + 1) * sizeof(RoundRow);
  if (s.sequential) {
    const double copies = std::min(s.threads, s.trials);  // trials in flight, each with its population
    // x, the meter's partial sums (dim + 1 per peer), the protocol's own arrays;
    // alive and waiting masks and the detection clock per peer.
    const double population =
        n * ((2 + r.population_vectors + s.workload_vectors) * vector + 8 + 16 + r.population_bytes);
    const double edges = graph.distinct_sends(s.rounds) * (r.population_edge_bytes + r.population_edge_vectors * vector);
    e.memory.push_back({"population", size_flag, copies * population});
    e.memory.push_back({"link loads", "--peers", copies * LinkLoads::bytes(link, s.peers, 8 * model + 8)});  // a round's time
    // The rounds simulated flow by flow, kept for the trials to share (sim/fluid_memo.hpp).
    if (LinkLoads::simulated(link, r.pattern, s.peers).messages > 0)
      e.memory.push_back({"fluid memo", "--peers", static_cast<double>(FluidMemo::kCapacity)});
    if (graph_bytes + edges > 0) e.memory.push_back({"graph", "--topology", copies * (graph_bytes + edges)});
  } else {
    const double here = s.peers_here;
    e.memory.push_back({"peer vectors", size_flag, here * (1 + r.peer_vectors) * vector});
    // Each rank builds the whole graph.
    if (graph_bytes > 0) e.memory.push_back({"graph (one per peer)", "--topology", here * graph_bytes});
    if (model > dim) {  // core/padding.hpp: a staging buffer per message in flight
      const double staged = s.shared_padding ? dim : model + dim;  // SMPI maps one shared tail for all
      e.memory.push_back({"padding buffers", "--model-dim", here * r.messages_in_flight * 8 * staged});
    }
  }
  if (const double hosts = Hosts::bytes(link, s.peers, s.compute_flops > 0); s.sequential && hosts > 0)
    e.memory.push_back({"lognormal hosts", "--platform", hosts});  // drawn once for the run
  for (const MemoryPart& part : s.workload) e.memory.push_back(part);
  e.memory.push_back({"trial records", "--rounds", records});
  // The trace's batch (trace/trial_tables.hpp: up to 65,536 rows and the trial
  // that passes them), and the block each column is written from.
  if (s.traced)
    e.memory.push_back({"trace batch", "--rounds",
                        std::min(static_cast<double>(s.trials) * (s.rounds + 1), 65536.0 + s.rounds + 1) *
                            (sizeof(RoundRow) + 8)});
  for (const MemoryPart& part : e.memory) e.memory_bytes += part.bytes;

  e.round_bytes = r.round_bytes + (s.churn ? n * 8 * model : 0.0);
  e.trial_bytes = s.rounds * e.round_bytes;
  e.pattern = r.pattern;
  if (s.sequential) {
    e.round_seconds = s.compute_flops / link.host_speed + r.idle_seconds + round_time(r.pattern, e.round_bytes, link).total() +
                      (s.failures ? s.detection_timeout : 0.0);
    e.trial_seconds = s.rounds * e.round_seconds;
    e.wall_seconds = wall_seconds(r, s, link, graph);
  }
  return e;
}

double memory_available(int threads) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  double limit = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) - kProgramBytes
                                       : HUGE_VAL;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    limit = std::min(limit, static_cast<double>(rl.rlim_cur) - mapped_now() - std::max(0, threads) * kThreadAddressSpace);
  return std::max(0.0, limit);
}

void check_run_estimate(const RunEstimate& e, const RunShape& s, const PlatformModel& link, double available) {
  if (e.memory_bytes > available) {
    const auto largest = std::max_element(e.memory.begin(), e.memory.end(),
                                          [](const MemoryPart& a, const MemoryPart& b) { return a.bytes < b.bytes; });
    throw ConfigError(largest->flag + ": the run needs about " + gigabytes(e.memory_bytes) + " on this machine (" +
                      largest->what + ": " + gigabytes(largest->bytes) + "), more than the " + gigabytes(available) +
                      " it may use (physical memory or ulimit -v); use a smaller value, or see --dry-run");
  }
  if (!(e.trial_bytes <= kMaxCountedBytes)) {
    const std::string beyond = " bytes, past the " + number(kMaxCountedBytes) + " a trace can count";
    if (!(e.round_bytes <= kMaxCountedBytes)) {
      const std::string flag = s.model_dim > s.dim ? "--model-dim" : s.dim > 1 ? "--dim" : "--peers";
      throw ConfigError(flag + ": one round would send up to " + number(e.round_bytes) + beyond +
                        "; use a smaller value");
    }
    throw ConfigError("--rounds: " + std::to_string(std::llround(s.rounds)) + " would take the bytes_sent counter to " +
                      number(e.trial_bytes) + beyond + " (" + number(e.round_bytes) +
                      " a round); accepted: at most " + number(std::floor(kMaxCountedBytes / e.round_bytes)) +
                      " rounds with these settings");
  }
  if (!s.sequential || (std::isfinite(e.trial_seconds) && e.trial_seconds <= kMaxSimulatedSeconds)) return;
  // Name the flag behind the largest share of a round's time.
  const RoundTime t = round_time(e.pattern, e.round_bytes, link);
  const double detection = s.failures ? s.detection_timeout : 0.0;
  struct Cause {
    double seconds;
    const char* flag;
    double value;
  };
  const Cause causes[] = {{detection, "--detection-timeout", s.detection_timeout},
                          {s.compute_flops / link.host_speed, s.compute_flag.c_str(), s.compute_flag_value},
                          {t.link_latency, "--link-latency", link.link_latency},
                          {t.backbone_latency, "--backbone-latency", link.backbone_latency},
                          {t.link_transfer, "--link-bandwidth", link.bandwidth},
                          {t.backbone_transfer, "--backbone-bandwidth", link.backbone},
                          {t.wan_latency, "--wan-latency", link.wan_latency},
                          {t.wan_transfer, "--wan-bandwidth", link.wan_bandwidth}};
  Cause worst{-1, "--rounds", s.rounds};
  for (const Cause& c : causes) {
    const double v = std::isnan(c.seconds) ? HUGE_VAL : c.seconds;
    if (v > worst.seconds) worst = {v, c.flag, c.value};
  }
  throw ConfigError(std::string(worst.flag) + ": " + number(worst.value) + " would take a trial's simulated time to " + number(e.trial_seconds) +
                    " s (" + number(e.round_seconds) + " s a round, " + std::to_string(std::llround(s.rounds)) +
                    " rounds), beyond the " + number(kMaxSimulatedSeconds) +
                    " s a run may simulate (about 32 years); use a value that keeps it within");
}

std::vector<std::string> describe_estimate(const RunEstimate& e, const RunShape& s, double available) {
  std::vector<std::string> lines;
  std::string parts;
  for (const MemoryPart& p : e.memory) parts += (parts.empty() ? "" : ", ") + p.what + " " + gigabytes(p.bytes);
  lines.push_back("memory: about " + gigabytes(e.memory_bytes) + " on this machine (" + parts + "; " +
                  gigabytes(available) + " available)");
  lines.push_back("bytes: at most " + number(e.round_bytes) + " a round, " + number(e.trial_bytes) + " a trial (" +
                  number(s.peers > 0 ? e.trial_bytes / s.peers : 0) + " per peer)");
  if (s.sequential) {
    lines.push_back("simulated time: at most " + number(e.round_seconds) + " s a round, " + number(e.trial_seconds) +
                    " s a trial (alpha-beta estimate)");
    lines.push_back("wall time: about " + number(e.wall_seconds) + " s");
  } else {
    lines.push_back("simulated time: per the engine (SMPI simulates it; Open MPI measures it)");
  }
  return lines;
}

}  // namespace avb
