#include "averaging_oracle.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "protocols/butterfly_allreduce.hpp"
#include "protocols/coded_allreduce.hpp"
#include "protocols/compress.hpp"
#include "protocols/gossip.hpp"
#include "protocols/grid.hpp"
#include "protocols/groups.hpp"

namespace avb::oracle {

Matrix initial_state(std::uint64_t seed, int n, int dim) {
  Matrix x(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(dim)));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < dim; ++k) x[i][k] = initial_value(seed, i, k);
  return x;
}

std::vector<double> mean(const Matrix& x) {
  std::vector<double> m(x.front().size(), 0.0);
  for (const auto& row : x)
    for (std::size_t k = 0; k < m.size(); ++k) m[k] += row[k];
  for (double& v : m) v /= static_cast<double>(x.size());
  return m;
}

namespace {
// Replaces the rows of `members` by their mean.
void average_group(Matrix& x, const std::vector<int>& members) {
  const std::size_t dim = x.front().size();
  std::vector<double> m(dim, 0.0);
  for (int i : members)
    for (std::size_t k = 0; k < dim; ++k) m[k] += x[i][k];
  for (double& v : m) v /= static_cast<double>(members.size());
  for (int i : members) x[i] = m;
}

// Round t's random order of `peers`: by (shuffle key, peer).
std::vector<int> shuffled(std::vector<int> peers, std::uint64_t seed, int t) {
  std::sort(peers.begin(), peers.end(), [&](int a, int b) {
    const auto ka = shuffle_key(seed, t, a), kb = shuffle_key(seed, t, b);
    return ka != kb ? ka < kb : a < b;
  });
  return peers;
}

// Encodes `values` with dither key (seed, t, peer, message) and decodes them.
std::vector<double> through_wire(const Quantizer& q, std::vector<double> values, std::uint64_t seed, int t, int peer,
                                 std::uint64_t message) {
  std::vector<std::byte> bytes;
  q.encode(values, EncodeContext{seed, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(peer), message}, bytes);
  q.decode(bytes, {}, values);
  return values;
}

// Part p of a quantized butterfly (docs/protocols.md, "Quantizers"): reducer p adds
// its own exact copy and the decoded copies of the other contributors (member i's
// copy keyed by message 2p), in member order, divides, and every alive member
// takes the decoded average (keyed by reducer p's peer and message 2p + 1).
void quantized_part(Matrix& x, const std::vector<int>& members, const Matrix& before,
                    const std::vector<int>& contributors, const std::vector<bool>& failed, int p, Part part,
                    const Quantizer& q, std::uint64_t seed, int t) {
  const auto begin = static_cast<std::ptrdiff_t>(part.begin), end = static_cast<std::ptrdiff_t>(part.end);
  std::vector<double> sum(part.size(), 0.0);
  for (int i : contributors) {
    std::vector<double> copy(before[i].begin() + begin, before[i].begin() + end);
    if (i != p) copy = through_wire(q, copy, seed, t, members[i], 2 * static_cast<std::uint64_t>(p));
    for (std::size_t k = 0; k < copy.size(); ++k) sum[k] += copy[k];
  }
  for (double& v : sum) v /= static_cast<double>(contributors.size());
  sum = through_wire(q, sum, seed, t, members[p], 2 * static_cast<std::uint64_t>(p) + 1);
  for (std::size_t i = 0; i < members.size(); ++i)
    if (!failed[i]) std::copy(sum.begin(), sum.end(), x[members[i]].begin() + begin);
}

// One group's butterfly all-reduce under `semantics`, written per part: part p is
// reduced by the member at position p, from the members that delivered it.
void butterfly_group(Matrix& x, const std::vector<int>& members, const ProtocolOptions& protocol,
                     const FailureModel& failures, std::uint64_t seed, int t, RoundEffect& effect) {
  const int n = static_cast<int>(members.size());
  if (n < 2 || n < protocol.min_group_size) return;
  const std::size_t dim = x.front().size();
  ++effect.groups;
  std::vector<bool> failed(members.size());
  std::vector<int> sent(members.size(), 0);  // parts a failed member delivered
  int alive_count = 0;
  for (int i = 0; i < n; ++i) {
    failed[i] = !failures.alive(t, members[i]);
    if (failed[i]) sent[i] = parts_delivered(seed, t, members[i], n);
    else ++alive_count;
  }
  if (alive_count < n) {
    ++effect.failed_groups;
    if (*protocol.on_failure == FailureSemantics::abort) return;
  }
  Matrix before;
  for (int i : members) before.push_back(x[i]);
  const Quantizer quantizer(protocol.quantizer);
  for (int p = 0; p < n; ++p) {
    const Part part = butterfly_part(dim, n, p);
    if (part.size() == 0 || failed[p]) continue;  // a failed reducer's part stays local
    std::vector<int> contributors;
    for (int i = 0; i < n; ++i) {
      const int distance = ((p - i) % n + n) % n;  // i's parts go to i+1, i+2, ...
      if (i == p || !failed[i] || (distance >= 1 && distance <= sent[i])) contributors.push_back(i);
    }
    if (protocol.quantizer.kind != QuantizerKind::none) {
      quantized_part(x, members, before, contributors, failed, p, part, quantizer, seed, t);
      effect.bytes += quantizer.encoded_bytes(part.size()) *
                      (contributors.size() - 1 + static_cast<std::size_t>(alive_count - 1));
      continue;
    }
    for (std::size_t k = part.begin; k < part.end; ++k) {
      double sum = 0.0;
      for (int i : contributors) sum += before[i][k];
      const double average = sum / static_cast<double>(contributors.size());
      for (int i = 0; i < n; ++i)
        if (!failed[i]) x[members[i]][k] = average;
    }
    effect.bytes += 8ull * part.size() * (contributors.size() - 1 + static_cast<std::size_t>(alive_count - 1));
  }
}

// The quantized all-reduce over `members` (peer ids by rank) replaces the plain
// mean: the algorithm's own encodings and sums, rank by rank (coded_allreduce.hpp,
// whose MPI form tests/mpi checks against this). Returns the bytes sent.
std::uint64_t coded_allreduce(Matrix& x, const std::vector<int>& members, const ProtocolOptions& protocol,
                              std::uint64_t seed, int t, const Matrix& before) {
  const std::size_t dim = x.front().size();
  std::vector<double> rows;
  for (int p : members) rows.insert(rows.end(), before[p].begin(), before[p].end());
  const Quantizer quantizer(protocol.quantizer);
  const CodedRun run{&quantizer, seed, static_cast<std::uint64_t>(t), members};
  const std::uint64_t bytes = coded_average_rows(rows, dim, protocol.collective, run);
  for (std::size_t r = 0; r < members.size(); ++r)
    std::copy(rows.begin() + static_cast<std::ptrdiff_t>(r * dim), rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * dim),
              x[members[r]].begin());
  return bytes;
}

bool takes_part_in(const ProtocolOptions& protocol, const FailureModel& failures, int t, int peer) {
  return *protocol.on_failure != FailureSemantics::survivors || failures.alive(t, peer);
}

}  // namespace

void moshpit_step(const ProtocolOptions& protocol, const FailureModel& failures, std::uint64_t seed, int t,
                  Matrix& x, RoundEffect& effect, TrialState& state) {
  const int n = static_cast<int>(x.size());
  const std::vector<int>& sides = protocol.grid;
  const int d = static_cast<int>(sides.size());
  if (state.cell.empty()) {
    state.seed = seed;
    state.cell = place_peers(seed, sides, n, protocol.placement);
    for (int p = 0; p < n; ++p) {
      std::vector<int> key;
      for (int a = 1; a < d; ++a) key.push_back(cell_coordinate(sides, state.cell[p], a));
      state.key.push_back(key);
    }
  }
  // Buckets of participants with equal group identity, in peer order first.
  std::map<std::vector<std::int64_t>, std::vector<int>> buckets;
  for (int p = 0; p < n; ++p) {
    if (!takes_part_in(protocol, failures, t, p)) continue;
    std::vector<std::int64_t> id;
    if (protocol.key_update == KeyUpdate::axis) {
      const int axis = (t - 1) % d;
      for (int a = 0; a < d; ++a)
        if (a != axis) id.push_back(cell_coordinate(sides, state.cell[p], a));
    } else {
      id.assign(state.key[p].begin(), state.key[p].end());
    }
    buckets[id].push_back(p);
  }
  for (auto& [id, peers] : buckets) {
    const std::vector<int> members = shuffled(peers, seed, t);
    butterfly_group(x, members, protocol, failures, seed, t, effect);
    if (protocol.key_update == KeyUpdate::chunk && d > 1)
      for (int pos = 0; pos < static_cast<int>(members.size()); ++pos) {
        std::vector<int>& key = state.key[members[pos]];
        key.erase(key.begin());
        key.push_back(pos);
      }
  }
}

// What receiver i uses for sender j's value in round t when values travel
// quantized (docs/protocols.md, "Quantized gossip and pairwise"): Q(x_j), encoded
// once per sender and round with dither key (seed, t, j, message 0), decoded near
// i's own value. When it does not decode the failure counts, and then: lattice,
// i's one-byte verdict goes back to j and j sends x_j itself (8 bytes a value);
// the other kinds, i's own value. The verdict byte is counted for every lattice
// message, decoded or not.
std::vector<double> received(const Quantizer& q, std::uint64_t seed, int t, int j, const std::vector<double>& xj,
                             const std::vector<double>& own, RoundEffect& effect) {
  std::vector<std::byte> bytes;
  q.encode(xj, EncodeContext{seed, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(j), 0}, bytes);
  const bool lattice = q.spec().kind == QuantizerKind::lattice;
  if (lattice) effect.bytes += 1;
  std::vector<double> out(own.size());
  if (q.decode(bytes, own, out).ok) return out;
  ++effect.decode_failures;
  if (!lattice) return own;
  effect.bytes += 8 * xj.size();
  return xj;
}

// Graph protocols: one synchronous step on the old values, with the rows, matchings
// and neighbour rules of docs/protocols.md.
void graph_step(const ProtocolOptions& protocol, const FailureModel& failures, std::uint64_t seed, int t, Matrix& x,
                RoundEffect& effect, TrialState& state) {
  const int n = static_cast<int>(x.size());
  const std::size_t d = x.front().size();
  if (protocol.name != "sgp-paper" && (!state.topology || state.seed != seed)) {
    state.topology.emplace(*protocol.topology, n, seed);
    state.seed = seed;
  }
  const Matrix old = x;
  const Quantizer quantizer(protocol.quantizer);
  const bool quantized = protocol.quantizer.kind != QuantizerKind::none;
  if (protocol.name == "gossip") {
    for (int i = 0; i < n; ++i) {
      const MixingRow row = alive_mixing_row(*state.topology, protocol.weights, protocol.alive_weights, failures, t, i);
      if (row.peers.empty()) continue;
      std::vector<double> mixed(d, 0.0);
      for (std::size_t k = 0; k < row.peers.size(); ++k) {
        const int j = row.peers[k];
        // Own term exact; a neighbour's value as received.
        const std::vector<double> v = quantized && j != i ? received(quantizer, seed, t, j, old[j], old[i], effect)
                                                          : old[j];
        for (std::size_t c = 0; c < d; ++c) mixed[c] += row.weights[k] * v[c];
      }
      x[i] = mixed;
      for (int j : state.topology->out_neighbours(t, i))
        if (failures.alive(t, j)) effect.bytes += quantizer.encoded_bytes(d);
    }
  } else if (protocol.name == "sgp-paper") {
    // The plain mean over i's alive sources, each edge counted (the graph's
    // multiplicities), in ascending order; one message per distinct other source.
    std::vector<int> sources;
    for (int i = 0; i < n; ++i) {
      if (!failures.alive(t, i)) continue;
      sgp_paper_sources(n, t, i, sources);
      std::vector<double> sum(d, 0.0);
      std::set<int> others;
      int count = 0;
      for (int j : sources) {
        if (!failures.alive(t, j)) continue;
        ++count;
        if (j != i) others.insert(j);
        for (std::size_t c = 0; c < d; ++c) sum[c] += old[j][c];
      }
      for (std::size_t c = 0; c < d; ++c) x[i][c] = sum[c] / static_cast<double>(count);
      effect.bytes += 8 * d * others.size();
    }
  } else if (protocol.name == "pushsum") {
    if (state.mass.empty()) {
      state.mass = x;
      for (auto& m : state.mass) m.push_back(1.0);
    } else {
      // What the caller did to x since the last round (SGD steps) joins the
      // numerator, on alive and down peers alike; pure averaging adds zeros.
      for (int i = 0; i < n; ++i)
        for (std::size_t c = 0; c < d; ++c) state.mass[i][c] += x[i][c] - state.last[i][c];
    }
    const Topology& g = *state.topology;
    Matrix sent = state.mass;  // each alive peer's mass times its share
    for (int i = 0; i < n; ++i) {
      if (!failures.alive(t, i)) continue;
      int outs = 0;
      for (int j : g.out_neighbours(t, i)) outs += failures.alive(t, j) ? 1 : 0;
      const double share = 1.0 / static_cast<double>(outs + 1);
      for (double& v : sent[i]) v *= share;
      effect.bytes += 8 * (d + 1) * static_cast<std::uint64_t>(outs);
    }
    for (int i = 0; i < n; ++i) {
      if (!failures.alive(t, i)) continue;
      std::vector<int> from{i};
      for (int j : g.in_neighbours(t, i))
        if (failures.alive(t, j)) from.push_back(j);
      std::sort(from.begin(), from.end());
      std::vector<double> sum(d + 1, 0.0);
      for (int j : from)
        for (std::size_t c = 0; c <= d; ++c) sum[c] += sent[j][c];
      state.mass[i] = sum;
    }
    // Every peer, alive or down, shows x / w and remembers it.
    for (int i = 0; i < n; ++i)
      for (std::size_t c = 0; c < d; ++c) x[i][c] = state.mass[i][c] / state.mass[i][d];
    state.last = x;
  } else {  // pairwise
    const std::vector<int> partner = random_matching(*state.topology, seed, failures, t);
    for (int i = 0; i < n; ++i) {
      const int j = partner[i];
      if (j < 0) continue;
      if (i < j) ++effect.groups;
      effect.bytes += quantizer.encoded_bytes(d);
      if (!quantized) {
        for (std::size_t c = 0; c < d; ++c) x[i][c] = (old[i][c] + old[j][c]) / 2.0;
        continue;
      }
      const int before = effect.decode_failures;
      const std::vector<double> v = received(quantizer, seed, t, j, old[j], old[i], effect);
      // Undecodable and no fallback (not lattice): i keeps its value.
      if (effect.decode_failures != before && protocol.quantizer.kind != QuantizerKind::lattice) continue;
      for (std::size_t c = 0; c < d; ++c) x[i][c] = (old[i][c] + v[c]) / 2.0;
    }
  }
}

// CHOCO-Gossip (docs/protocols.md, "choco"): every alive peer adds
// q_i = Q(x_i - x̂_i), decoded near 0 (the exact difference when that fails), to
// x̂_i; then x_i += gamma * sum over alive neighbours j of w_ij (x̂_j - x̂_i), with
// the new copies. A receiver's copy equals the sender's x̂ whenever it is used, so
// one x̂ per peer models them all; what differs is the traffic: the encoding
// (plus q at full precision when it does not decode) to a receiver that heard the
// sender's last update, x̂ itself at full precision to one that did not.
void choco_step(const ProtocolOptions& protocol, const FailureModel& failures, std::uint64_t seed, int t, Matrix& x,
                RoundEffect& effect, TrialState& state) {
  const int n = static_cast<int>(x.size());
  const std::size_t d = x.front().size();
  if (state.public_copy.empty() || state.seed != seed) {
    state.topology.emplace(*protocol.topology, n, seed);
    state.seed = seed;
    state.public_copy.assign(static_cast<std::size_t>(n), std::vector<double>(d, 0.0));
    state.updated.assign(static_cast<std::size_t>(n), 0);
    state.sent.assign(static_cast<std::size_t>(n), {});
  }
  const Topology& g = *state.topology;
  const Quantizer quantizer(protocol.quantizer);
  const std::vector<double> zeros(d, 0.0);
  for (int i = 0; i < n; ++i) {
    if (!failures.alive(t, i)) continue;
    std::vector<double>& own = state.public_copy[i];
    std::vector<double> diff(d), q(d);
    for (std::size_t c = 0; c < d; ++c) diff[c] = x[i][c] - own[c];
    std::vector<std::byte> bytes;
    quantizer.encode(diff, EncodeContext{seed, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(i), 0}, bytes);
    const bool decodes = quantizer.decode(bytes, zeros, q).ok;
    if (!decodes) {
      q = diff;
      ++effect.decode_failures;
    }
    for (std::size_t c = 0; c < d; ++c) own[c] += q[c];
    for (int k : g.out_neighbours(t, i)) {
      if (!failures.alive(t, k)) continue;
      const auto it = state.sent[i].find(k);
      const bool current = (it == state.sent[i].end() ? 0 : it->second) == state.updated[i];
      effect.bytes += current ? bytes.size() + (decodes ? 0 : 8 * d) : 8 * d;
      state.sent[i][k] = t;
    }
    state.updated[i] = t;
  }
  for (int i = 0; i < n; ++i) {
    if (!failures.alive(t, i)) continue;
    const MixingRow row = g.mixing_row(protocol.weights, t, i);
    std::vector<double> pull(d, 0.0);
    for (std::size_t k = 0; k < row.peers.size(); ++k) {
      const int j = row.peers[k];
      if (j == i || !failures.alive(t, j)) continue;
      for (std::size_t c = 0; c < d; ++c)
        pull[c] += row.weights[k] * (state.public_copy[j][c] - state.public_copy[i][c]);
    }
    for (std::size_t c = 0; c < d; ++c) x[i][c] += protocol.consensus_step * pull[c];
  }
}

void random_groups_step(const ProtocolOptions& protocol, const FailureModel& failures, std::uint64_t seed, int t,
                        Matrix& x, RoundEffect& effect) {
  const int n = static_cast<int>(x.size());
  std::vector<int> participants;
  for (int p = 0; p < n; ++p)
    if (takes_part_in(protocol, failures, t, p)) participants.push_back(p);
  const std::vector<int> order = shuffled(participants, seed, t);
  const int count = static_cast<int>(order.size());
  const int g = protocol.group_size;
  const int r = std::max(1, count / g);
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(r));
  for (int i = 0; i < count; ++i) groups[i < r * g ? i / g : (i - r * g) % r].push_back(order[i]);
  for (const auto& members : groups) butterfly_group(x, members, protocol, failures, seed, t, effect);
}

RoundEffect step(const ProtocolOptions& protocol, const FailureModel& failures, int t, Matrix& x) {
  TrialState unused;
  return step(protocol, failures, 0, t, x, unused);
}

RoundEffect step(const ProtocolOptions& protocol, const FailureModel& failures, std::uint64_t seed, int t, Matrix& x,
                 TrialState& state) {
  const int n = static_cast<int>(x.size());
  const std::size_t dim = x.front().size();
  RoundEffect effect;
  if (protocol.name == "allreduce") {
    const std::vector<int> alive = failures.alive_peers(t);
    const bool quantized = protocol.quantizer.kind != QuantizerKind::none;
    const Matrix before = quantized ? x : Matrix{};
    if (*protocol.on_failure == FailureSemantics::abort) {
      effect.groups = 1;
      if (static_cast<int>(alive.size()) == n) {
        std::vector<int> all(alive);
        average_group(x, all);
        effect.bytes = collective_bytes(protocol.collective, static_cast<int>(alive.size()), dim);
        if (quantized) effect.bytes = coded_allreduce(x, all, protocol, seed, t, before);
      } else {
        effect.failed_groups = 1;
      }
    } else {  // survivors
      if (alive.size() >= 2) {
        effect.groups = 1;
        average_group(x, alive);
        effect.bytes = collective_bytes(protocol.collective, static_cast<int>(alive.size()), dim);
        if (quantized) effect.bytes = coded_allreduce(x, alive, protocol, seed, t, before);
      }
    }
    return effect;
  }
  if (protocol.name == "random-groups") {
    random_groups_step(protocol, failures, seed, t, x, effect);
    return effect;
  }
  if (protocol.name == "moshpit") {
    moshpit_step(protocol, failures, seed, t, x, effect, state);
    return effect;
  }
  if (protocol.name == "gossip" || protocol.name == "pushsum" || protocol.name == "sgp-paper" ||
      protocol.name == "pairwise") {
    graph_step(protocol, failures, seed, t, x, effect, state);
    return effect;
  }
  if (protocol.name == "choco") {
    choco_step(protocol, failures, seed, t, x, effect, state);
    return effect;
  }
  throw std::logic_error("oracle: no model of protocol " + protocol.name);
}

RoundRow measure(const Matrix& x, const std::vector<double>& reference) {
  const std::vector<double> m = mean(x);
  const double nd = static_cast<double>(x.size()) * static_cast<double>(m.size());
  RoundRow row;
  for (const auto& xi : x)
    for (std::size_t k = 0; k < m.size(); ++k) {
      row.variance += (xi[k] - m[k]) * (xi[k] - m[k]);
      row.error += (xi[k] - reference[k]) * (xi[k] - reference[k]);
    }
  row.variance /= nd;
  row.error /= nd;
  for (std::size_t k = 0; k < m.size(); ++k) row.mean_drift += (m[k] - reference[k]) * (m[k] - reference[k]);
  row.mean_drift /= static_cast<double>(m.size());
  return row;
}

std::uint64_t apply_joins(const FailureModel& failures, int t, Matrix& x) {
  // Donors never join, so the order of the copies does not matter.
  std::uint64_t bytes = 0;
  for (int p = 0; p < static_cast<int>(x.size()); ++p) {
    const int donor = failures.joined(t, p) ? failures.donor(t, p) : -1;
    if (donor < 0) continue;
    x[static_cast<std::size_t>(p)] = x[static_cast<std::size_t>(donor)];
    bytes += sizeof(double) * x[static_cast<std::size_t>(p)].size();
  }
  return bytes;
}

TrialRecord run_trial(const AveragingOptions& raw, int n, int trial) {
  const AveragingOptions options = resolve(raw, n);
  const std::uint64_t seed = trial_seed(options.seed, trial);
  const FailureModel failures = trial_failures(options, seed, n);
  Matrix x = initial_state(seed, n, options.dim);
  const std::vector<double> reference = mean(x);
  TrialRecord record;
  record.index = trial;
  record.seed = seed;
  RoundRow row = measure(x, reference);
  row.alive = n;
  record.rows.push_back(row);
  std::uint64_t bytes = 0;
  const double min_target = options.targets.back();
  TrialState state;
  for (int t = 1; t <= options.rounds; ++t) {
    if (options.stop_at_target && record.rows.back().variance < min_target) break;
    bytes += apply_joins(failures, t, x);
    const RoundEffect effect = step(options.protocol, failures, seed, t, x, state);
    bytes += effect.bytes;
    row = measure(x, reference);
    row.round = t;
    row.alive = failures.count_alive(t);
    row.groups = effect.groups;
    row.failed_groups = effect.failed_groups;
    row.decode_failures = effect.decode_failures;
    row.bytes_sent = bytes;
    record.rows.push_back(row);
  }
  for (double target : options.targets) record.targets.push_back(rounds_to_target(record.rows, target));
  return record;
}

}  // namespace avb::oracle
