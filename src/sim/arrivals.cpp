#include "sim/arrivals.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"

namespace avb {

double max_work_jitter(double sigma) { return std::exp(8.6 * sigma); }

Arrivals::Arrivals(std::uint64_t trial_seed, const StragglerSpec& stragglers, double flops, WaitSpec wait,
                   std::function<double(int)> speed)
    : stragglers_(trial_seed, stragglers),
      sigma_(stragglers.sigma),
      seed_(trial_seed),
      flops_(flops),
      wait_(wait),
      speed_(std::move(speed)) {}

double Arrivals::work_factor(int t, int peer) const {
  const double factor = stragglers_.factor(peer);
  if (sigma_ <= 0.0) return factor;
  const double z = Stream(seed_, StreamId::work_jitter).normal(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(peer), 0);
  return factor * std::exp(sigma_ * z);
}

double Arrivals::at(int t, int peer) const { return flops_ * work_factor(t, peer) / speed_(peer); }

double Arrivals::deadline(int t, std::span<const int> members) const {
  scratch_.clear();
  for (int s = std::max(0, t - kDeadlineHistory); s < t; ++s)
    for (int p : members) scratch_.push_back(at(s, p));
  // The median of an even count is the upper middle one: a value that occurred.
  auto middle = [](std::vector<double>& v) {
    auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
  };
  const double median = middle(scratch_);
  for (double& a : scratch_) a = std::fabs(a - median);
  const double mad = middle(scratch_);
  return std::max(wait_.deadline_floor, median + wait_.deadline_k * mad);
}

Arrivals::Cut Arrivals::cut(int t, std::span<const int> members, std::vector<std::uint8_t>& late,
                            std::span<const double> known) const {
  late.assign(members.size(), 0);
  Cut cut;
  if (members.empty()) return cut;
  std::vector<double>& arrived = arrived_;
  arrived.resize(members.size());
  for (std::size_t i = 0; i < members.size(); ++i)
    arrived[i] = known.empty() ? at(t, members[i]) : known[static_cast<std::size_t>(members[i])];
  const double last = *std::max_element(arrived.begin(), arrived.end());
  switch (wait_.policy) {
    case WaitPolicy::all: cut.proceed = last; break;
    case WaitPolicy::quorum: {
      // The ceil(q m)-th arrival; rounding q m down first would let 0.75 of 4 members be 2.
      const double wanted = std::ceil(wait_.quorum * static_cast<double>(members.size()) - 1e-9);
      const auto need = static_cast<std::size_t>(std::clamp(wanted, 1.0, static_cast<double>(members.size())));
      std::vector<double>& sorted = sorted_;
      sorted.assign(arrived.begin(), arrived.end());
      std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(need - 1), sorted.end());
      cut.proceed = sorted[need - 1];
      break;
    }
    case WaitPolicy::deadline: cut.proceed = std::min(last, deadline(t, members)); break;
  }
  for (std::size_t i = 0; i < members.size(); ++i)
    if (arrived[i] > cut.proceed) {
      late[i] = 1;
      ++cut.late;
    }
  return cut;
}

}  // namespace avb
