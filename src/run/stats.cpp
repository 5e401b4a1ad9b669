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
  for (std::size_t k = 0; k < RoundReport::kCounts.size(); ++k)
    buffer_[vector_size_ + counts + k] = in.counters.*RoundReport::kCounts[k];
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
  for (std::size_t k = 0; k < RoundReport::kCounts.size(); ++k)
    out.counts.*RoundReport::kCounts[k] = static_cast<int>(buffer_[vector_size_ + counts + k]);
  out.detection_time = slot(detection);
  out.seconds = global_clock_ ? slot(end) - slot(start) : slot(duration);
  out.stop_requested = slot(stop) != 0.0;
  return out;
}

void StatsReduction::broadcast(std::span<double> verdict) { tree_broadcast_from_root(comm_, verdict); }

}  // namespace avb
