#include "run/stats.hpp"

#include "core/reduce.hpp"

namespace avb {

StatsReduction::StatsReduction(MPI_Comm world, std::size_t vector_size)
    : comm_(Comm::duplicate(world)),
      vector_size_(vector_size),
      buffer_(vector_size + slot_count),
      scratch_(buffer_.size()),
      global_clock_(clock_is_global(comm_)) {}

Totals StatsReduction::reduce(const PeerTally& in) {
  slot(squares) = in.squares;
  slot(bytes_low) = static_cast<double>(in.bytes_sent & 0xffffffffu);
  slot(bytes_high) = static_cast<double>(in.bytes_sent >> 32);
  slot(groups) = in.counters.groups;
  slot(failed_groups) = in.counters.failed_groups;
  slot(decode_failures) = in.counters.decode_failures;
  slot(late) = in.counters.late;
  slot(duration) = in.end - in.start;
  slot(start) = in.start;
  slot(end) = in.end;
  slot(stop) = in.stop_requested ? 1.0 : 0.0;
  slot(detection) = in.detection_seconds;
  tree_reduce_to_root(comm_, buffer_, vector_size_ + duration, scratch_);

  Totals out;
  if (comm_.rank() != 0) return out;
  out.squares = slot(squares);
  out.bytes_sent = (static_cast<std::uint64_t>(slot(bytes_high)) << 32) + static_cast<std::uint64_t>(slot(bytes_low));
  out.groups = static_cast<std::int32_t>(slot(groups));
  out.failed_groups = static_cast<std::int32_t>(slot(failed_groups));
  out.decode_failures = static_cast<std::int32_t>(slot(decode_failures));
  out.late = static_cast<std::int32_t>(slot(late));
  out.detection_time = slot(detection);
  out.seconds = global_clock_ ? slot(end) - slot(start) : slot(duration);
  out.stop_requested = slot(stop) != 0.0;
  return out;
}

void StatsReduction::broadcast(std::span<double> verdict) { tree_broadcast_from_root(comm_, verdict); }

}  // namespace avb
