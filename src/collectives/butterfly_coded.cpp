// The quantized butterfly all-reduce (butterfly_allreduce.hpp): the same messages
// as the plain one, each carrying an encoding instead of the doubles.
#include "collectives/butterfly_allreduce.hpp"
#include "codecs/wire.hpp"

#include "core/reduce.hpp"

namespace avb {

namespace {
// Tags of their own, so a quantized message can never match a plain receive.
constexpr int kCodedScatterTag = 113;
constexpr int kCodedGatherTag = 114;

std::span<std::uint8_t> window(std::vector<std::uint8_t>& bytes, std::size_t begin, std::size_t size) {
  return {bytes.data() + begin, size};
}
}  // namespace

EncodeContext scatter_context(const ButterflyCoding& coding, int position, int p) {
  return {coding.seed, coding.round, static_cast<std::uint64_t>(coding.peers[static_cast<std::size_t>(position)]),
          2 * static_cast<std::uint64_t>(p)};
}

EncodeContext gather_context(const ButterflyCoding& coding, int p) {
  return {coding.seed, coding.round, static_cast<std::uint64_t>(coding.peers[static_cast<std::size_t>(p)]),
          2 * static_cast<std::uint64_t>(p) + 1};
}

void ButterflyAllreduce::average(Comm& comm, std::span<double> x, std::span<const MemberFate> fates,
                                 const ButterflyCoding& coding) {
  if (!coding.quantized()) return average(comm, x, fates);
  if (comm.size() == 1) return;
  coded_scatter(comm, x, fates, coding);
  const bool failed = !fates.empty() && fates[static_cast<std::size_t>(comm.rank())].failed;
  if (!failed) coded_gather(comm, x, fates, coding);
}

// Every member sends Q(part k) to each alive reducer k it delivers to; an alive
// reducer averages the decoded copies with its own exact part, in member order.
void ButterflyAllreduce::coded_scatter(Comm& comm, std::span<double> x, std::span<const MemberFate> fates,
                                       const ButterflyCoding& coding) {
  const int n = comm.size();
  const int me = comm.rank();
  const Quantizer& q = *coding.quantizer;
  auto fate = [&](int i) -> const MemberFate& { return fates.empty() ? kAlive : fates[static_cast<std::size_t>(i)]; };
  const Part own = butterfly_part(x.size(), n, me);
  const std::size_t bytes = q.encoded_bytes(own.size());
  const bool reducing = !fate(me).failed && own.size() > 0;
  arrived_.resize(static_cast<std::size_t>(n) * bytes);
  if (reducing)
    for (int i = 0; i < n; ++i)
      if (i != me && delivers(fate(i), i, me, n))
        comm.irecv<std::uint8_t>(window(arrived_, static_cast<std::size_t>(i) * bytes, bytes), i, kCodedScatterTag,
                                 requests_);
  encoded_.resize(static_cast<std::size_t>(n));
  for (int s = 1; s < n; ++s) {
    const int k = (me + s) % n;
    const Part p = butterfly_part(x.size(), n, k);
    if (fate(k).failed || p.size() == 0 || !delivers(fate(me), me, k, n)) continue;
    std::vector<std::byte>& out = encoded_[static_cast<std::size_t>(k)];
    q.encode(x.subspan(p.begin, p.size()), scatter_context(coding, me, k), out);
    comm.isend<std::uint8_t>(wire(out), k, kCodedScatterTag, requests_);
  }
  comm.wait_all(requests_, "butterfly all-reduce");
  if (!reducing) return;

  const std::span<double> mine = x.subspan(own.begin, own.size());
  incoming_.resize(static_cast<std::size_t>(n) * own.size());
  inputs_.clear();
  for (int i = 0; i < n; ++i) {
    if (i == me) {
      inputs_.push_back(mine.data());
    } else if (delivers(fate(i), i, me, n)) {
      double* slot = incoming_.data() + static_cast<std::size_t>(i) * own.size();
      q.decode(unwire(window(arrived_, static_cast<std::size_t>(i) * bytes, bytes)), {}, {slot, own.size()});
      inputs_.push_back(slot);
    }
  }
  sum_divide(inputs_, own.size(), static_cast<double>(inputs_.size()), mine.data());
}

// Each alive reducer encodes its average once, takes the decoded average itself and
// sends the encoding to every alive member; a failed reducer's part stays local.
void ButterflyAllreduce::coded_gather(Comm& comm, std::span<double> x, std::span<const MemberFate> fates,
                                      const ButterflyCoding& coding) {
  const int n = comm.size();
  const int me = comm.rank();
  const Quantizer& q = *coding.quantizer;
  auto fate = [&](int i) -> const MemberFate& { return fates.empty() ? kAlive : fates[static_cast<std::size_t>(i)]; };
  offsets_.assign(static_cast<std::size_t>(n) + 1, 0);
  for (int k = 0; k < n; ++k)
    offsets_[static_cast<std::size_t>(k) + 1] =
        offsets_[static_cast<std::size_t>(k)] + q.encoded_bytes(butterfly_part(x.size(), n, k).size());
  arrived_.resize(offsets_.back());
  auto received = [&](int k) {
    const auto begin = offsets_[static_cast<std::size_t>(k)];
    return window(arrived_, begin, offsets_[static_cast<std::size_t>(k) + 1] - begin);
  };
  for (int k = 0; k < n; ++k)
    if (k != me && !fate(k).failed && butterfly_part(x.size(), n, k).size() > 0)
      comm.irecv<std::uint8_t>(received(k), k, kCodedGatherTag, requests_);
  const Part own = butterfly_part(x.size(), n, me);
  std::vector<std::byte>& average = encoded_[static_cast<std::size_t>(me)];
  if (own.size() > 0) {
    const std::span<double> mine = x.subspan(own.begin, own.size());
    q.encode(mine, gather_context(coding, me), average);
    q.decode(average, {}, mine);
    for (int i = 0; i < n; ++i)
      if (i != me && !fate(i).failed) comm.isend<std::uint8_t>(wire(average), i, kCodedGatherTag, requests_);
  }
  comm.wait_all(requests_, "butterfly all-reduce");
  for (int k = 0; k < n; ++k) {
    const Part p = butterfly_part(x.size(), n, k);
    if (k != me && !fate(k).failed && p.size() > 0) q.decode(unwire(received(k)), {}, x.subspan(p.begin, p.size()));
  }
}

}  // namespace avb
