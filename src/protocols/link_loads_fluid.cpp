// LinkLoads' flow-by-flow part: a round's simulated phases as flows on the links
// they cross (protocols/link_loads.hpp).
#include <algorithm>
#include <limits>
#include <numeric>

#include "protocols/link_loads.hpp"
#include "sim/fluid.hpp"

namespace avb {
namespace {

// SMPI's network/weight-S (bytes): a flow's penalty adds it over each link's bandwidth.
constexpr double kWeightS = 8775;

}  // namespace

// The open phase's messages as flows on the links they cross (host links up and
// down, region backbones, wide-area links), each with SMPI's factors of its size;
// a message in k pieces is one flow that shares and is bounded as k would be.
std::vector<FluidNetwork::Flow> LinkLoads::fluid_flows(FluidNetwork& net, std::span<const Message> messages) const {
  std::unordered_map<std::int64_t, int> ids;
  const std::int64_t hosts = 2 * n_, backbones = hosts + regions_;
  auto link = [&](std::int64_t key, double capacity) {
    const auto [it, added] = ids.try_emplace(key, 0);
    if (added) it->second = net.add_link(capacity);
    return it->second;
  };
  auto up = [&](int p) { return link(2 * std::int64_t{p}, hosts_.bandwidth(p)); };
  auto down = [&](int p) { return link(2 * std::int64_t{p} + 1, hosts_.bandwidth(p)); };
  auto backbone = [&](int r) { return link(hosts + r, platform_.backbone_in(r)); };
  std::vector<FluidNetwork::Flow> flows;
  flows.reserve(messages.size());
  for (const Message& m : messages) {
    const int a = region(m.from), b = region(m.to);
    FluidNetwork::Flow flow;
    flow.route = {up(m.from), backbone(a), down(m.to)};
    flow.back = {up(m.to), backbone(b), down(m.from)};
    double slowest = std::min({hosts_.bandwidth(m.from), hosts_.bandwidth(m.to), platform_.backbone_in(a)});
    double weights = kWeightS * (1 / hosts_.bandwidth(m.from) + 1 / hosts_.bandwidth(m.to) + 1 / platform_.backbone_in(a));
    if (a != b) {
      flow.route.push_back(backbone(b));
      flow.back.push_back(backbone(a));
      slowest = std::min(slowest, platform_.backbone_in(b));
      weights += kWeightS / platform_.backbone_in(b);
      platform_.for_each_wide_link(a, b, [&](std::int64_t key, double bandwidth, double) {
        const int wan = link(backbones + key, bandwidth);
        flow.route.push_back(wan);
        flow.back.push_back(wan);
        slowest = std::min(slowest, bandwidth);
        weights += kWeightS / bandwidth;
      });
    }
    const double latency = platform_.route_latency(a, b);
    const SmpiFactors f = smpi_factors(m.bytes / m.pieces);
    flow.bytes = m.bytes;
    flow.latency = f.latency * latency;
    flow.factor = f.bandwidth;
    flow.bound = m.pieces * std::min(slowest, kTcpWindow / (2 * latency));
    flow.penalty = (latency + weights) / m.pieces;
    flows.push_back(std::move(flow));
  }
  return flows;
}

// The round's simulated phases so far, in one run: a message starts when both its
// peers are done with their messages of earlier phases (a large one waits for its
// receive to be posted, and a peer posts a phase's receives when it is done with
// the phase before), and not before they are ready; a peer's work follows the
// messages it has before it (a churn's loads). So the peers of a ring go from step
// to step at their own pace, and a group's second half overlaps another's first.
void LinkLoads::simulate_pending() {
  if (pending_.empty()) return;
  FluidNetwork net;
  std::vector<Message> messages;
  messages.reserve(pending_.size());
  for (const Staged& m : pending_) messages.push_back(m.message);
  std::vector<FluidNetwork::Flow> flows = fluid_flows(net, messages);
  struct Peer {
    double clock;         // at the start of the simulation
    int stage = -1;       // of its latest messages
    std::vector<int> latest, before;  // its messages of that stage, and of its stage before
    bool latest_first = false, before_first = false;  // before the work
  };
  std::unordered_map<int, Peer> peers;
  auto peer = [&](int p) -> Peer& {
    const auto [it, added] = peers.try_emplace(p);
    if (added) it->second.clock = clock(p);
    return it->second;
  };
  std::vector<double> starts(pending_.size());
  for (std::size_t k = 0; k < pending_.size(); ++k) {
    const Staged& m = pending_[k];
    double start = -std::numeric_limits<double>::infinity();
    for (int p : {m.message.from, m.message.to}) {
      Peer& e = peer(p);
      if (e.stage != m.stage) {
        if (!e.latest.empty()) {
          e.before = std::move(e.latest);
          e.before_first = e.latest_first;
        }
        e.latest.clear();
        e.stage = m.stage;
        e.latest_first = m.before_work;
      }
      const double work = e.before_first && ready_ ? ready_(p) : 0.0;
      for (int g : e.before) flows[k].after.emplace_back(g, work);
      start = std::max(start, m.before_work ? every_ : e.clock);
    }
    starts[k] = start;
    peer(m.message.from).latest.push_back(static_cast<int>(k));
    peer(m.message.to).latest.push_back(static_cast<int>(k));
  }
  const double first = *std::min_element(starts.begin(), starts.end());
  for (std::size_t k = 0; k < flows.size(); ++k) {
    flows[k].start = starts[k] - first;
    net.add_flow(std::move(flows[k]));
  }
  net.run(stop_, memo_);
  for (auto& [p, e] : peers) {
    double last = -std::numeric_limits<double>::infinity();
    for (int k : e.latest) last = std::max(last, first + net.end(static_cast<std::size_t>(k)));
    if (e.latest_first && ready_) last += ready_(p);  // its work follows its loads
    ahead_[p] = std::max(last, e.clock);
  }
  pending_.clear();
}

// A phase with too many messages repeated to simulate step by step, alone: a
// message starts when both its ends are ready, and the peers a repeated phase
// joins go through its repeats together (LinkLoads::repeat_together).
void LinkLoads::fluid_phase() {
  FluidNetwork net;
  std::vector<FluidNetwork::Flow> flows = fluid_flows(net, messages_);
  // The phase's peers, numbered in order of appearance, with their clocks.
  std::unordered_map<int, std::size_t> index;
  std::vector<int> peers;
  std::vector<double> done;  // each one's clock, then at the end of its last message
  auto number = [&](int p) {
    const auto [it, added] = index.try_emplace(p, peers.size());
    if (added) {
      peers.push_back(p);
      done.push_back(before_work_ ? every_ : clock(p));
    }
    return it->second;
  };
  std::vector<std::size_t> ends;  // per message: from's number, to's number
  std::vector<double> starts;
  for (const Message& m : messages_) {
    ends.push_back(number(m.from));
    ends.push_back(number(m.to));
    starts.push_back(std::max(done[ends[ends.size() - 2]], done[ends.back()]));
  }
  const double first = *std::min_element(starts.begin(), starts.end());
  const bool together = *std::max_element(starts.begin(), starts.end()) == first;
  for (std::size_t k = 0; k < flows.size(); ++k) {
    FluidNetwork::Flow flow = flows[k];
    flow.start = starts[k] - first;
    net.add_flow(std::move(flow));
  }
  net.run(stop_, memo_);
  for (std::size_t k = 0; k < flows.size(); ++k)
    for (std::size_t e : {ends[2 * k], ends[2 * k + 1]}) done[e] = std::max(done[e], first + net.end(k));
  if (repeats_ > 1) {
    // The phase's time when its messages start at once: this run's, if they did.
    if (!together) {
      for (FluidNetwork::Flow& flow : flows) net.add_flow(std::move(flow));
      net.run(stop_, memo_);
    }
    std::vector<double> alone(flows.size());
    for (std::size_t k = 0; k < flows.size(); ++k) alone[k] = net.end(k);
    repeat_together(ends, alone, done);
  }
  for (std::size_t p = 0; p < peers.size(); ++p)
    ahead_[peers[p]] = done[p] + (before_work_ && ready_ ? ready_(peers[p]) : 0.0);
}

// The peers a repeated phase joins (a ring, a group) go through its repeats
// together: the next begins when the last of them is done with the first, and
// lasts as long as their messages take when they start at once (`alone`).
void LinkLoads::repeat_together(std::span<const std::size_t> ends, std::span<const double> alone,
                                std::vector<double>& done) const {
  std::vector<std::size_t> root(done.size());
  std::iota(root.begin(), root.end(), std::size_t{0});
  auto find = [&](std::size_t p) {
    while (root[p] != p) p = root[p] = root[root[p]];
    return p;
  };
  for (std::size_t k = 0; k < alone.size(); ++k) root[find(ends[2 * k])] = find(ends[2 * k + 1]);
  std::vector<double> span(done.size(), 0.0), last(done.size(), -std::numeric_limits<double>::infinity());
  for (std::size_t k = 0; k < alone.size(); ++k) span[find(ends[2 * k])] = std::max(span[find(ends[2 * k])], alone[k]);
  for (std::size_t p = 0; p < done.size(); ++p) last[find(p)] = std::max(last[find(p)], done[p]);
  for (std::size_t p = 0; p < done.size(); ++p) done[p] = last[find(p)] + (repeats_ - 1) * span[find(p)];
}

}  // namespace avb
