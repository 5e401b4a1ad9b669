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
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // The earliest event, removed; now() becomes its time.
  Event pop() {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Event e = heap_.back().event;
    heap_.pop_back();
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
  static bool later(const Entry& a, const Entry& b) {
    return a.event.time != b.event.time ? a.event.time > b.event.time : a.order > b.order;
  }
  std::vector<Entry> heap_;
  std::uint64_t next_ = 0;
  double now_ = 0;
};

}  // namespace avb
