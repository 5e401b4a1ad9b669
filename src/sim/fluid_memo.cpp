#include "sim/fluid_memo.hpp"

#include <bit>
#include <cstring>

namespace avb {

namespace {

bool same_bits(const FluidMemo::Key& a, const FluidMemo::Key& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

// A multiply-xorshift mix of every word: keys of a run differ in few bits (a
// start time, a route), so each word must reach every bit of the hash.
std::uint64_t FluidMemo::hash(const Key& key) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ key.size();
  for (double v : key) {
    h ^= std::bit_cast<std::uint64_t>(v);
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  return h;
}

bool FluidMemo::find(const Key& key, std::vector<double>& ends, double& last) const {
  const std::uint64_t h = hash(key);
  const std::lock_guard lock(mutex_);
  const auto [first, end] = entries_.equal_range(h);
  for (auto it = first; it != end; ++it)
    if (same_bits(it->second.key, key)) {
      ends = it->second.ends;
      last = it->second.last;
      ++hits_;
      return true;
    }
  return false;
}

void FluidMemo::insert(Key key, const std::vector<double>& ends, double last) {
  const std::size_t size = (key.size() + ends.size()) * sizeof(double) + sizeof(Entry);
  const std::uint64_t h = hash(key);
  const std::lock_guard lock(mutex_);
  if (bytes_ + size > capacity_) return;
  const auto [first, end] = entries_.equal_range(h);
  for (auto it = first; it != end; ++it)
    if (same_bits(it->second.key, key)) return;  // another trial's, the same run
  bytes_ += size;
  entries_.emplace(h, Entry{std::move(key), ends, last});
}

std::size_t FluidMemo::bytes() const {
  const std::lock_guard lock(mutex_);
  return bytes_;
}

std::size_t FluidMemo::hits() const {
  const std::lock_guard lock(mutex_);
  return hits_;
}

}  // namespace avb
