// Availability traces (docs/failures.md): when each peer is down, read from a
// file instead of drawn from the seed. A peer that comes back is a new peer in
// its slot, as under churn: the trace is churn with a schedule someone measured.
//
// The file is CSV, one down spell per line, in rounds:
//   peer,down,up
//   3,5,9     peer 3 is down in rounds 5 to 8 and a new peer joins in round 9
//   3,20,     from round 20 on, peer 3 never comes back
// Lines starting with '#' and blank lines are skipped; peers not named are always
// up. Rounds, not seconds: which round a second falls in depends on the engine's
// time model, and the values of a run must not (scripts/avbench availability turns a
// trace in seconds into rounds for a stated round length).
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <span>
#include <string>
#include <vector>

namespace avb {

class Availability {
 public:
  // Throws ConfigError "--availability: NAME:LINE: ..." on anything but the
  // format above: a wrong header, a field that is not an integer, down < 1,
  // up <= down, or two spells of a peer that overlap or touch (a joiner cannot
  // fail in the round it joins).
  static Availability parse(std::istream& in, const std::string& name);
  static Availability read(const std::string& path);

  // One past the largest peer the trace names (0 for an empty trace).
  int peers() const { return static_cast<int>(offsets_.size()) - 1; }
  std::size_t spells() const { return switches_.size() / 2; }

  // `peer`'s rounds of failing and joining, alternating (F1, J1, F2, J2, ...),
  // ascending; a J of "never" is INT64_MAX. Empty for a peer the trace does not name.
  std::span<const std::int64_t> switches(int peer) const;

  // Heap bytes held, for the run's memory estimate.
  std::size_t bytes() const { return offsets_.capacity() * sizeof(std::size_t) + switches_.capacity() * sizeof(std::int64_t); }

  // Bytes a trace of `spells` lines over `peers` peers would hold, before reading it.
  static std::size_t bytes_for(std::size_t peers, std::size_t spells) {
    return (peers + 1) * sizeof(std::size_t) + 2 * spells * sizeof(std::int64_t);
  }

 private:
  std::vector<std::size_t> offsets_{0};  // peer p's switches are [offsets_[p], offsets_[p + 1])
  std::vector<std::int64_t> switches_;
};

}  // namespace avb
