#include "protocols/population_groups.hpp"

#include <algorithm>

#include "core/rng.hpp"
#include "protocols/groups.hpp"
#include "protocols/time_model.hpp"

namespace avb {

void PopulationGroups::average(std::span<const int> group, Population& x, const PopulationRound& round,
                               RoundEffect& effect) {
  if (static_cast<int>(group.size()) < std::max(2, min_group_size_)) return;
  ++effect.groups;
  std::span<const int> members = group;
  bool any_late = false;
  if (round.arrivals != nullptr) {  // as GroupAverager::run cuts it
    // A peer is in one group a round: its work still holds its arrival here.
    members = cut_late(group, round.t, round.failures, *round.arrivals, cut_, round.work);
    any_late = cut_.any_late;
    effect.late += static_cast<int>(group.size() - members.size());  // the cut removes only the late
    if (cut_.any_late)  // everyone works until the group goes on (LateCut::work_seconds)
      for (int peer : cut_.alive) round.work[static_cast<std::size_t>(peer)] = cut_.proceed;
  }
  const int n = static_cast<int>(members.size());
  bool any_failed = false;
  for (int peer : members) any_failed = any_failed || !round.alive[static_cast<std::size_t>(peer)];
  if (any_failed) {
    ++effect.failed_groups;
    for (int peer : members) round.wait(peer);
  }
  if ((any_failed || any_late) && semantics_ == FailureSemantics::abort) return;
  if (n < std::max(2, min_group_size_)) return;
  if (quantizer_.spec().kind != QuantizerKind::none) {
    average_coded(members, x, round, effect);
    charge(members, x, round);
    return;
  }
  if (any_failed) {
    average_parts(members, x, round, effect);
  } else {
    average_all(members, x);
    effect.bytes += 16ull * x.model_dim * static_cast<std::uint64_t>(n - 1);
  }
  charge(members, x, round);
}

// The group's messages, as ButterflyAllreduce sends them: member k's part goes to
// it from every other alive member, and back. A failed member sends nothing.
void PopulationGroups::charge(std::span<const int> members, const Population& x, const PopulationRound& round) {
  if (round.links == nullptr) return;
  const int n = static_cast<int>(members.size());
  const bool coded = quantizer_.spec().kind != QuantizerKind::none;
  senders_.resize(members.size());
  parts_.resize(members.size());
  std::size_t count = 0;
  for_each_part_size(coded ? static_cast<std::size_t>(x.dim) : x.model_dim, n, [&](int k, std::size_t size) {
    const int peer = members[static_cast<std::size_t>(k)];
    if (!round.alive[static_cast<std::size_t>(peer)]) return;
    senders_[count] = peer;
    parts_[count++] = coded ? static_cast<double>(quantizer_.encoded_bytes(size)) : 8.0 * static_cast<double>(size);
  });
  round.links->butterfly(std::span(senders_).first(count), std::span(parts_).first(count));
}

// Nobody failed: every coordinate becomes the members' mean, summed in member order
// (the order in which a part's reducer adds what it received).
void PopulationGroups::average_all(std::span<const int> members, Population& x) {
  const auto dim = static_cast<std::size_t>(x.dim);
  const double n = static_cast<double>(members.size());
  if (dim == 1) {
    double sum = 0.0;
    for (int i : members) sum += x.values[static_cast<std::size_t>(i)];
    const double mean = sum / n;
    for (int i : members) x.values[static_cast<std::size_t>(i)] = mean;
    return;
  }
  sum_.assign(dim, 0.0);
  for (int i : members) {
    const std::span<const double> row = x.peer(i);
    for (std::size_t k = 0; k < dim; ++k) sum_[k] += row[k];
  }
  for (double& s : sum_) s /= n;
  for (int i : members) std::copy(sum_.begin(), sum_.end(), x.peer(i).begin());
}

// Partial semantics with failed members (collectives/butterfly_allreduce.hpp): part p
// is averaged by member p, if it is alive, over the members that delivered it.
void PopulationGroups::average_parts(std::span<const int> members, Population& x, const PopulationRound& round,
                                     RoundEffect& effect) {
  const int n = static_cast<int>(members.size());
  const auto dim = static_cast<std::size_t>(x.dim);
  const int alive_count = note_fates(members, x, round);
  for (int p = 0; p < n; ++p) {
    const Part part = butterfly_part(dim, n, p);
    const std::size_t charged = butterfly_part(x.model_dim, n, p).size();  // as ButterflyAllreduce sends it
    if (charged == 0 || fates_[static_cast<std::size_t>(p)].failed) continue;
    contributors_.clear();
    for (int i = 0; i < n; ++i)
      if (i == p || delivers(fates_[static_cast<std::size_t>(i)], i, p, n)) contributors_.push_back(i);
    for (std::size_t k = part.begin; k < part.end; ++k) {
      double sum = 0.0;
      for (int i : contributors_) sum += before_[static_cast<std::size_t>(i) * dim + k];
      const double mean = sum / static_cast<double>(contributors_.size());
      for (int i = 0; i < n; ++i)
        if (!fates_[static_cast<std::size_t>(i)].failed) x.peer(members[static_cast<std::size_t>(i)])[k] = mean;
    }
    effect.bytes += 8ull * charged * (contributors_.size() - 1 + static_cast<std::size_t>(alive_count - 1));
  }
}

// Fills fates_ and before_ (the members' vectors before the round); returns the
// number of alive members.
int PopulationGroups::note_fates(std::span<const int> members, const Population& x, const PopulationRound& round) {
  const int n = static_cast<int>(members.size());
  const auto dim = static_cast<std::size_t>(x.dim);
  fates_.assign(members.size(), MemberFate{});
  int alive_count = 0;
  for (int i = 0; i < n; ++i) {
    const int peer = members[static_cast<std::size_t>(i)];
    if (round.alive[static_cast<std::size_t>(peer)]) ++alive_count;
    else fates_[static_cast<std::size_t>(i)] = {true, parts_delivered(round.seed, round.t, peer, n)};
  }
  before_.resize(members.size() * dim);
  for (int i = 0; i < n; ++i) {
    const std::span<const double> row = x.peer(members[static_cast<std::size_t>(i)]);
    std::copy(row.begin(), row.end(), before_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(i) * dim));
  }
  return alive_count;
}

// The quantized butterfly (butterfly_allreduce.hpp), with or without failures: the
// same encodings, decoded and summed in the same order as ButterflyAllreduce.
void PopulationGroups::average_coded(std::span<const int> members, Population& x, const PopulationRound& round,
                                     RoundEffect& effect) {
  const int n = static_cast<int>(members.size());
  const auto dim = static_cast<std::size_t>(x.dim);
  const int alive_count = note_fates(members, x, round);
  const ButterflyCoding coding{&quantizer_, round.seed, static_cast<std::uint64_t>(round.t), members};
  for (int p = 0; p < n; ++p) {
    const Part part = butterfly_part(dim, n, p);
    if (part.size() == 0 || fates_[static_cast<std::size_t>(p)].failed) continue;
    reduce_coded(members, p, part, coding);  // sum_ = the decoded average
    for (int i = 0; i < n; ++i)
      if (!fates_[static_cast<std::size_t>(i)].failed)
        std::copy(sum_.begin(), sum_.end(), x.peer(members[static_cast<std::size_t>(i)]).begin() +
                                                static_cast<std::ptrdiff_t>(part.begin));
    effect.bytes += quantizer_.encoded_bytes(part.size()) *
                    (contributors_.size() - 1 + static_cast<std::size_t>(alive_count - 1));
  }
}

// Reducer p's work on `part`: its own copy exact, the others' decoded, summed in
// member order, divided, then encoded once and decoded into sum_.
void PopulationGroups::reduce_coded(std::span<const int> members, int p, Part part, const ButterflyCoding& coding) {
  const int n = static_cast<int>(members.size());
  const std::size_t dim = before_.size() / members.size();
  contributors_.clear();
  for (int i = 0; i < n; ++i)
    if (i == p || delivers(fates_[static_cast<std::size_t>(i)], i, p, n)) contributors_.push_back(i);
  sum_.assign(part.size(), 0.0);
  decoded_.resize(part.size());
  for (int i : contributors_) {
    const double* copy = before_.data() + static_cast<std::size_t>(i) * dim + part.begin;
    if (i != p) {
      quantizer_.encode({copy, part.size()}, scatter_context(coding, i, p), encoded_);
      quantizer_.decode(encoded_, {}, decoded_);
      copy = decoded_.data();
    }
    for (std::size_t k = 0; k < part.size(); ++k) sum_[k] += copy[k];
  }
  for (double& s : sum_) s /= static_cast<double>(contributors_.size());
  quantizer_.encode(sum_, gather_context(coding, p), encoded_);
  quantizer_.decode(encoded_, {}, sum_);
}

void BucketShuffle::make_keys(int n_peers, std::uint64_t seed, int t) {
  // Every peer's key, eight to a Philox block (shuffle_key's layout).
  keys_.resize(static_cast<std::size_t>(n_peers) + 8);
  const Stream stream(seed, StreamId::group_shuffle);
  for (int base = 0; base < n_peers; base += 8) {
    const Stream::Block block = stream.block(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(base / 8), 0);
    for (int j = 0; j < 8; ++j)
      keys_[static_cast<std::size_t>(base + j)] = static_cast<std::uint32_t>(block.w[j / 2] >> (j % 2 == 0 ? 0 : 32));
  }
}

void BucketShuffle::shuffle(std::span<int> peers, std::span<const int> starts, int n_peers, std::uint64_t seed,
                            int t) {
  make_keys(n_peers, seed, t);
  for (std::size_t b = 0; b + 1 < starts.size(); ++b) {
    const std::span<int> bucket = peers.subspan(static_cast<std::size_t>(starts[b]),
                                                static_cast<std::size_t>(starts[b + 1] - starts[b]));
    if (bucket.size() < 2) continue;
    order_.resize(bucket.size());
    for (std::size_t i = 0; i < bucket.size(); ++i)
      order_[i] = (std::uint64_t{keys_[static_cast<std::size_t>(bucket[i])]} << 32) | static_cast<std::uint32_t>(bucket[i]);
    std::sort(order_.begin(), order_.end());
    for (std::size_t i = 0; i < bucket.size(); ++i) bucket[i] = static_cast<int>(order_[i] & 0xffffffffu);
  }
}

void BucketShuffle::order(std::span<const int> participants, std::span<const std::int64_t> bucket, int buckets,
                          int n_peers, std::uint64_t seed, int t) {
  make_keys(n_peers, seed, t);
  // Bins of about one peer each: bucket b's bins are b << shift ... (b + 1) << shift - 1.
  const std::size_t count = participants.size();
  int shift = 1;
  while (shift < 24 && (static_cast<std::size_t>(buckets) << shift) < 2 * count) ++shift;
  const std::size_t bins = static_cast<std::size_t>(buckets) << shift;
  counts_.assign(bins + 1, 0);
  bin_.resize(count);
  auto bin_of = [&](std::size_t p) {
    const std::size_t b = bucket.empty() ? 0 : static_cast<std::size_t>(bucket[p]);
    return static_cast<int>((b << shift) | (keys_[p] >> (32 - shift)));
  };
  for (std::size_t i = 0; i < count; ++i) {
    bin_[i] = bin_of(static_cast<std::size_t>(participants[i]));
    ++counts_[static_cast<std::size_t>(bin_[i]) + 1];
  }
  for (std::size_t b = 1; b <= bins; ++b) counts_[b] += counts_[b - 1];
  starts_.resize(static_cast<std::size_t>(buckets) + 1);
  for (int b = 0; b <= buckets; ++b) starts_[static_cast<std::size_t>(b)] = counts_[static_cast<std::size_t>(b) << shift];
  sorted_.resize(count);
  // (bin, key) in one number: bins are in order already, so only peers of one bin
  // can be out of order, and comparing the numbers compares their keys.
  order_.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto slot = static_cast<std::size_t>(counts_[static_cast<std::size_t>(bin_[i])]++);
    sorted_[slot] = participants[i];
    order_[slot] = (static_cast<std::uint64_t>(bin_[i]) << 32) | keys_[static_cast<std::size_t>(participants[i])];
  }
  // Within a bin, peers are ascending; order them by key (ties by peer, kept).
  for (std::size_t i = 1; i < count; ++i) {
    const std::uint64_t key = order_[i];
    if (order_[i - 1] <= key) continue;
    const int p = sorted_[i];
    std::size_t j = i;
    for (; j > 0 && order_[j - 1] > key; --j) {
      order_[j] = order_[j - 1];
      sorted_[j] = sorted_[j - 1];
    }
    order_[j] = key;
    sorted_[j] = p;
  }
}

}  // namespace avb
