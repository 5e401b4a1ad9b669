// The sequential engine's event loop: things that happen at instants of simulated
// time, taken in order of time and, at equal times, in the order they were
// scheduled, so that the order depends on the events alone (never on threads or
// containers). An asynchronous protocol's sequential form (protocols/event_round.hpp)
// schedules its peers' deeds here and reacts to them one at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace avb {

// What happens: to which peer, of which kind (the protocol's own numbering), and
// one number it needs (a message's index, a tick).
struct Event {
  double time = 0;
  int peer = 0;
  int kind = 0;
  std::int64_t arg = 0;
};

class EventQueue {
 public:
  void at(double time, int peer, int kind, std::int64_t arg = 0) {
    heap_.push_back({Event{time, peer, kind, arg}, next_++});
    sift_up(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // The earliest event, removed; now() becomes its time.
  Event pop() {
    const Event e = heap_.front().event;
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    now_ = e.time;
    return e;
  }
  double now() const { return now_; }
  // The earliest event's time (not empty()).
  double top_time() const { return heap_.front().event.time; }
  // Moves the clock to `time` (no earlier than now, nor than the earliest event)
  // for something that happens outside the queue.
  void advance(double time) { now_ = time; }
  // Forgets every event and the clock (a new round).
  void reset(double now = 0) {
    heap_.clear();
    now_ = now;
  }

 private:
  struct Entry {
    Event event;
    std::uint64_t order;
  };
  static bool earlier(const Entry& a, const Entry& b) {
    return a.event.time != b.event.time ? a.event.time < b.event.time : a.order < b.order;
  }
  // A 4-ary heap: half the levels of a binary one, and a node's children share a
  // cache line or two (a million peers keep a million events in flight).
  static constexpr std::size_t kArity = 4;
  void sift_up(std::size_t i) {
    const Entry moving = heap_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (!earlier(moving, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = moving;
  }
  void sift_down(std::size_t i) {
    const Entry moving = heap_[i];
    const std::size_t n = heap_.size();
    for (;;) {
      const std::size_t first = kArity * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      for (std::size_t c = first + 1; c < std::min(first + kArity, n); ++c)
        if (earlier(heap_[c], heap_[best])) best = c;
      if (!earlier(heap_[best], moving)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = moving;
  }
  std::vector<Entry> heap_;
  std::uint64_t next_ = 0;
  double now_ = 0;
};

}  // namespace avb
