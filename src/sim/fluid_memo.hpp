// Runs of a FluidNetwork already simulated, looked up by their whole input: a
// round whose messages repeat (a ring or a fixed graph without failures, the same
// round in another trial) costs a lookup instead of a simulation of every flow.
// Exact by construction: the key holds every bit the run reads, so a hit returns
// what simulating would. Shared by the trials of a run (thread-safe); it keeps
// runs until their keys and ends fill `capacity` bytes, then only looks up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace avb {

class FluidMemo {
 public:
  // Bytes a run's memo holds at most (its share of the run's memory estimate).
  static constexpr std::size_t kCapacity = std::size_t{64} << 20;
  explicit FluidMemo(std::size_t capacity = kCapacity) : capacity_(capacity) {}
  // A run's input, serialised; its hash.
  using Key = std::vector<double>;
  // On a hit: each flow's end and the run's last, as the simulation gave them.
  bool find(const Key& key, std::vector<double>& ends, double& last) const;
  void insert(Key key, const std::vector<double>& ends, double last);
  std::size_t bytes() const;
  std::size_t hits() const;

 private:
  struct Entry {
    Key key;
    std::vector<double> ends;
    double last;
  };
  static std::uint64_t hash(const Key& key);
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_multimap<std::uint64_t, Entry> entries_;
  std::size_t bytes_ = 0;
  mutable std::size_t hits_ = 0;
};

}  // namespace avb
