#include "collectives/butterfly_allreduce.hpp"

#include "core/reduce.hpp"

namespace avb {

namespace {
constexpr int kScatterTag = 111;
constexpr int kGatherTag = 112;
}  // namespace

Part butterfly_part(std::size_t length, int n, int p) {
  const auto un = static_cast<std::size_t>(n);
  const auto up = static_cast<std::size_t>(p);
  return {length * up / un, length * (up + 1) / un};
}

bool delivers(const MemberFate& fate, int sender, int reducer, int n) {
  if (!fate.failed) return true;
  const int distance = ((reducer - sender) % n + n) % n;  // 1 for the first part it sends
  return distance >= 1 && distance <= fate.parts_delivered;
}

void ButterflyAllreduce::average(Comm& comm, std::span<double> x, std::span<const MemberFate> fates) {
  const int n = comm.size();
  const int me = comm.rank();
  if (n == 1) return;
  auto fate = [&](int i) -> const MemberFate& { return fates.empty() ? kAlive : fates[static_cast<std::size_t>(i)]; };
  auto part_of = [&](int p) { return butterfly_part(x.size(), n, p); };
  auto slice = [&](Part p) { return x.subspan(p.begin, p.size()); };
  // Under --model-dim, part p travels charged as the model's part p: it is sent
  // whenever that is non-empty, even if the vector's part p is empty.
  const std::size_t model = comm.model_length(x.size());
  auto charged = [&](int p) { return butterfly_part(model, n, p).size(); };

  if (fate(me).failed) {
    // Deliver the parts sent before failing, to reducers that are still there.
    for (int s = 1; s <= fate(me).parts_delivered; ++s) {
      const int k = (me + s) % n;
      if (!fate(k).failed && charged(k) > 0) comm.isend<double>(slice(part_of(k)), k, kScatterTag, requests_, charged(k));
    }
    comm.wait_all(requests_, "butterfly all-reduce");
    return;
  }

  // Scatter: receive my part from every member that delivers it, send every alive
  // reducer its part. Receives are posted first so no send waits on a receive.
  const Part own = part_of(me);
  incoming_.resize(static_cast<std::size_t>(n) * own.size());
  auto slot = [&](int i) { return std::span<double>(incoming_.data() + static_cast<std::size_t>(i) * own.size(), own.size()); };
  if (charged(me) > 0)
    for (int i = 0; i < n; ++i)
      if (i != me && delivers(fate(i), i, me, n)) comm.irecv<double>(slot(i), i, kScatterTag, requests_, charged(me));
  for (int s = 1; s < n; ++s) {
    const int k = (me + s) % n;
    if (!fate(k).failed && charged(k) > 0) comm.isend<double>(slice(part_of(k)), k, kScatterTag, requests_, charged(k));
  }
  comm.wait_all(requests_, "butterfly all-reduce");

  // Reduce in member order, so the bits depend on the group alone.
  if (own.size() > 0) {
    const std::span<double> mine = slice(own);
    inputs_.clear();
    for (int i = 0; i < n; ++i) {
      if (i != me && !delivers(fate(i), i, me, n)) continue;
      inputs_.push_back(i == me ? mine.data() : slot(i).data());
    }
    // ((0 + x_0) + x_1) + ... in member order, then / contributors: one fused pass.
    sum_divide(inputs_, own.size(), static_cast<double>(inputs_.size()), mine.data());
  }

  // Gather: the averaged parts of alive reducers go to every alive member. A failed
  // reducer's part is not received: the local values stay.
  for (int k = 0; k < n; ++k)
    if (k != me && !fate(k).failed && charged(k) > 0)
      comm.irecv<double>(slice(part_of(k)), k, kGatherTag, requests_, charged(k));
  if (charged(me) > 0)
    for (int i = 0; i < n; ++i)
      if (i != me && !fate(i).failed) comm.isend<double>(slice(own), i, kGatherTag, requests_, charged(me));
  comm.wait_all(requests_, "butterfly all-reduce");
}

}  // namespace avb
