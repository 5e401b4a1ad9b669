// The sequential engine's event loop: things that happen at instants of simulated
// time, taken in order of time and, at equal times, in the order they were
// scheduled, so that the order depends on the events alone (never on threads or
// containers). An asynchronous protocol's sequential form (protocols/event_round.hpp)
// schedules its peers' deeds here and reacts to them one at a time.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.hpp"

namespace avb {

// What happens: to which peer (in [0, 2^24), the engine's most peers), of which
// kind (the protocol's own numbering, in [-128, 127]), and one number it needs
// (a message's index, a tick).
struct Event {
  double time = 0;
  int peer = 0;
  int kind = 0;
  int arg = 0;
};

// A radix heap: simulated time never goes back, so no event is scheduled before
// the last one taken, and an event only moves to buckets nearer that one.
// Each bucket is appended to and swept in order, which is what keeps a million
// events in flight cheap (a binary heap's every push and pop is a chain of
// cache misses at that size). Each event moves through a bucket at most once per
// bit of its time; a small earliest bucket is sorted into the run at once
// (refill) rather than spread down the buckets bit by bit.
class EventQueue {
 public:
  [[gnu::always_inline]] void at(double time, int peer, int kind, int arg = 0) {
    const std::uint64_t key = key_of(time);
    if (key < now_key_) throw Error("event queue: an event was scheduled before the last one taken");
    if (kind < -128 || kind > 127 || peer < 0 || peer >= (1 << 24))
      throw Error("event queue: an event's kind or peer is out of range");
    put(Entry{key, (static_cast<std::uint32_t>(peer) << 8) | static_cast<std::uint8_t>(kind), arg});
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // The earliest event, removed; now() becomes its time.
  Event pop() {
    if (head_ == buckets_[0].size) refill();
    const Entry& e = buckets_[0].data[head_++];
    --size_;
    now_key_ = e.key;
    now_ = time_of(e.key);
    return Event{now_, static_cast<int>(e.peer_kind >> 8), static_cast<std::int8_t>(e.peer_kind & 0xff), e.arg};
  }
  double now() const { return now_; }
  // If no event is due at or before `time` (>= now), the clock moves on to it
  // and true is returned: the caller does at once what an event at `time`
  // would do, in the same order. A conservative test (it may say false when it
  // could say true), cheaper than scheduling and taking the event.
  bool advance_to(double time) {
    const std::uint64_t key = key_of(time);
    if (key < now_key_) throw Error("event queue: the clock cannot go back");
    if (head_ < buckets_[0].size && buckets_[0].data[head_].key <= key) return false;
    if (filled_ != 0) {
      // The least key of the first non-empty bucket b: last_'s bits above b - 1,
      // with bit b - 1 set.
      const int bit = std::countr_zero(filled_);
      const std::uint64_t least = ((last_ >> bit) | 1) << bit;
      if (key >= least) return false;
    }
    last_ = key;  // each waiting event keeps its bucket: its highest bit differing from last_ is unchanged
    now_key_ = key;
    run_end_ = std::max(run_end_, key + 1);  // events at this very time join the run
    now_ = time;
    return true;
  }
  static constexpr std::size_t kEntryBytes = 16;  // an event's bytes in the queue
  // Forgets every event and the clock (a new round).
  void reset(double now = 0) {
    for (auto& bucket : buckets_) bucket.size = 0;
    head_ = 0;
    size_ = 0;
    last_ = 0;
    run_end_ = 0;
    now_key_ = 0;
    filled_ = 0;
    now_ = now;
  }

 private:
  // 16 bytes: an event moves through a few buckets, so its size is what
  // the queue's time goes into.
  struct Entry {
    std::uint64_t key;
    std::uint32_t peer_kind;  // the peer above the kind's 8 bits
    int arg;
  };
  // A double's bits as an unsigned number in the same order as the doubles.
  static std::uint64_t key_of(double time) {
    const auto bits = std::bit_cast<std::uint64_t>(time);
    return (bits >> 63) != 0 ? ~bits : bits | (std::uint64_t{1} << 63);
  }
  static double time_of(std::uint64_t key) {
    return std::bit_cast<double>((key >> 63) != 0 ? key & ~(std::uint64_t{1} << 63) : ~key);
  }
  // Bucket 0 is the run: the events before run_end_, in the order they are
  // taken (by time, then as scheduled), from head_ on. Bucket b > 0 holds those
  // (at or after run_end_) whose highest bit differing from last_ is bit b - 1.
  static constexpr std::size_t kSmall = 48;  // a bucket that becomes the run at once
  // The run is used up: the earliest time left is the least key of the first
  // bucket that holds any. A small bucket becomes the run, sorted; a large one
  // spreads over the lower buckets, its events at that very time to the run.
  // (Spreading a bucket of a few events took five moves an event at 1024 peers.)
  void refill() {
    Bucket& run = buckets_[0];
    run.size = 0;
    head_ = 0;
    const auto b = static_cast<std::size_t>(std::countr_zero(filled_)) + 1;  // pop() is never called on an empty queue
    Bucket& from = buckets_[b];
    filled_ &= ~(std::uint64_t{1} << (b - 1));
    if (from.size <= kSmall) {
      // Every event of bucket b has the same bits from b - 1 up (those of the
      // old last_ above b - 1, and bit b - 1 set); every later bucket's lie above them.
      const auto low = static_cast<unsigned>(b - 1);
      run_end_ = low == 63 ? UINT64_MAX : ((from.data[0].key >> low) + 1) << low;
      // Insertion by key alone: a bucket holds its events in the order they were
      // scheduled (spreading keeps it, and at() appends), so ties keep that order;
      // and events come nearly in time order, so few move far.
      for (const Entry& e : from) {
        run.push(e);
        std::size_t i = run.size - 1;
        for (; i > 0 && run.data[i - 1].key > e.key; --i) run.data[i] = run.data[i - 1];
        run.data[i] = e;
      }
      last_ = run.data[0].key;
    } else {
      last_ = std::min_element(from.begin(), from.end(), [](const Entry& x, const Entry& y) { return x.key < y.key; })->key;
      run_end_ = last_ + 1;
      for (const Entry& e : from) put(e);
    }
    from.size = 0;
  }
  // An array that only grows (std::vector's push_back, called from several
  // places, is not inlined, and its calls were a sixth of a swarm round).
  struct Bucket {
    std::unique_ptr<Entry[]> data;
    std::size_t size = 0, capacity = 0;
    Entry* begin() { return data.get(); }
    Entry* end() { return data.get() + size; }
    [[gnu::always_inline]] void push(const Entry& e) {
      if (size == capacity) grow();
      data[size++] = e;
    }
    [[gnu::noinline]] void grow() {
      capacity = std::max<std::size_t>(64, 2 * capacity);
      auto bigger = std::make_unique_for_overwrite<Entry[]>(capacity);
      std::copy(begin(), end(), bigger.get());
      data = std::move(bigger);
    }
  };
  [[gnu::always_inline]] void put(const Entry& e) {
    if (e.key < run_end_) {  // into the run, after every event not later (e's order is the latest)
      Bucket& run = buckets_[0];
      run.push(e);
      std::size_t i = run.size - 1;
      for (; i > head_ && run.data[i - 1].key > e.key; --i) run.data[i] = run.data[i - 1];
      run.data[i] = e;
      return;
    }
    const auto b = static_cast<std::size_t>(64 - std::countl_zero(e.key ^ last_));  // > 0: e.key >= run_end_ > last_
    buckets_[b].push(e);
    filled_ |= std::uint64_t{1} << (b - 1);
  }
  static_assert(sizeof(Entry) == kEntryBytes);
  std::array<Bucket, 65> buckets_;
  std::uint64_t filled_ = 0;  // bit b - 1: bucket b > 0 holds events
  std::size_t head_ = 0;  // bucket 0's next event
  std::size_t size_ = 0;
  std::uint64_t last_ = 0;  // no event waits before it
  std::uint64_t run_end_ = 0;  // > last_ but after a reset; no bucket b > 0 holds an event before it
  std::uint64_t now_key_ = 0;
  double now_ = 0;
};

}  // namespace avb
