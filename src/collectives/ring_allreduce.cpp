#include "collectives/ring_allreduce.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/reduce.hpp"

namespace avb {

namespace {
constexpr int kRingTag = 101;

// Chunk c of a length-`length` vector cut into n parts: [begin, end).
struct Chunk {
  std::size_t begin, end;
  std::size_t size() const { return end - begin; }
};
Chunk chunk(std::size_t length, int n, int c) {
  const auto un = static_cast<std::size_t>(n);
  const auto uc = static_cast<std::size_t>(c);
  return {length * uc / un, length * (uc + 1) / un};
}
// Segment j of `parts` segments of chunk c, the same cut on every rank.
Chunk segment(Chunk c, std::size_t parts, std::size_t j) {
  return {c.begin + c.size() * j / parts, c.begin + c.size() * (j + 1) / parts};
}
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

void RingAllreduce::sum(Comm& comm, std::span<double> x) { run(comm, x, false); }
void RingAllreduce::average(Comm& comm, std::span<double> x) { run(comm, x, true); }

// This rank's view of the ring: its neighbours and how the vector is cut, the same
// cut on every rank. Under --model-dim the messages are those of the model's
// length (Comm::model_length): its chunks set the number of segments, and the
// vector's segment j travels charged as the model's segment j, even when empty.
struct RingAllreduce::Plan {
  Plan(int size, int rank, std::size_t length_, std::size_t model_, std::size_t segment_doubles)
      : n(size), r(rank), length(length_), model(model_), right(mod(rank + 1, size)), left(mod(rank - 1, size)) {
    const auto un = static_cast<std::size_t>(n);
    const std::size_t largest = (model + un - 1) / un;
    parts = segment_doubles == 0 || largest <= segment_doubles ? 1 : (largest + segment_doubles - 1) / segment_doubles;
    slot = ((length + un - 1) / un + parts - 1) / parts + 1;  // >= every segment of every chunk
  }
  int stages() const { return 2 * (n - 1); }
  bool reducing(int t) const { return t < n - 1; }
  int in_index(int t) const { return reducing(t) ? mod(r - t - 1, n) : mod(r - (t - (n - 1)), n); }
  int out_index(int t) const { return reducing(t) ? mod(r - t, n) : mod(r + 1 - (t - (n - 1)), n); }
  Chunk in_chunk(int t) const { return chunk(length, n, in_index(t)); }
  Chunk out_chunk(int t) const { return chunk(length, n, out_index(t)); }
  // Model elements of segment j of chunk c (its real size when there is no model).
  std::size_t charged(int c, std::size_t j) const { return segment(chunk(model, n, c), parts, j).size(); }

  int n, r;
  std::size_t length, model;
  int right, left;
  std::size_t parts = 1, slot = 1;
};

void RingAllreduce::run(Comm& comm, std::span<double> x, bool divide) {
  if (comm.size() == 1) return;  // the sum and the mean of one vector are the vector
  // The 2(n-1) stages: reduce-scatter steps s = 0..n-2, then all-gather steps.
  //   reduce-scatter s: pass chunk r-s to the right, add chunk r-s-1 from the left;
  //                     after n-1 steps this rank holds the full sum of chunk r+1.
  //   all-gather s:     pass the finished chunk r+1-s to the right, receive the
  //                     finished chunk r-s from the left, in place.
  // What a stage receives is exactly what the next stage sends, so each chunk is
  // cut into segments that flow through the stages independently: segment j is
  // forwarded as soon as it has been received and reduced, while segment j+1 is
  // still on the wire. The additions per element are those of the plain ring
  // (own value + what came from the left), so segmenting changes no bit.
  const Plan plan(comm.size(), comm.rank(), x.size(), comm.model_length(x.size()), segment_);
  incoming_.resize(plan.parts * plan.slot);
  sends_.clear();
  next_sends_.clear();
  // Stage 0 sends this rank's own values of chunk r.
  for (std::size_t j = 0; j < plan.parts; ++j) {
    const Chunk seg = segment(plan.out_chunk(0), plan.parts, j);
    comm.isend<double>(x.subspan(seg.begin, seg.size()), plan.right, kRingTag, sends_, plan.charged(plan.out_index(0), j));
  }
  for (int t = 0; t < plan.stages(); ++t) run_stage(comm, x, plan, t, divide);
  comm.wait_all(sends_, "ring all-reduce");
}

void RingAllreduce::run_stage(Comm& comm, std::span<double> x, const Plan& plan, int t, bool divide) {
  const bool reducing = plan.reducing(t);
  const Chunk in = plan.in_chunk(t);
  const std::size_t parts = plan.parts, slot = plan.slot;
  recvs_.clear();
  // Receive into the slots (reduce-scatter) or straight into x (all-gather). The
  // sends of the previous stage have completed, so no receive lands in a buffer
  // still being sent; messages from the left arrive in the order posted.
  for (std::size_t j = 0; j < parts; ++j) {
    const Chunk seg = segment(in, parts, j);
    std::span<double> into = reducing ? std::span<double>(incoming_.data() + j * slot, seg.size())
                                      : x.subspan(seg.begin, seg.size());
    comm.irecv<double>(into, plan.left, kRingTag, recvs_, plan.charged(plan.in_index(t), j));  // recvs_[j]
  }
  for (std::size_t j = 0; j < parts; ++j) {
    comm.wait(recvs_[j], "ring all-reduce");
    const Chunk seg = segment(in, parts, j);
    std::span<double> mine = x.subspan(seg.begin, seg.size());
    if (reducing) {
      add_into(mine, std::span<const double>(incoming_.data() + j * slot, seg.size()));
      // Divide rather than multiply by 1/n: x/n is the correctly rounded mean of
      // the sum, which multiplying by a rounded 1/n is not.
      if (divide && t == plan.n - 2) divide_by(mine, static_cast<double>(plan.n));
    }
    // What stage t received is what stage t + 1 sends: the same chunk, the same charge.
    if (t + 1 < plan.stages())
      comm.isend<double>(mine, plan.right, kRingTag, next_sends_, plan.charged(plan.in_index(t), j));
  }
  comm.wait_all(sends_, "ring all-reduce");
  std::swap(sends_, next_sends_);
}

}  // namespace avb
