#include "averaging_oracle.hpp"

#include <stdexcept>

namespace avb::oracle {

Matrix initial_state(std::uint64_t seed, int n, int dim) {
  Matrix x(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(dim)));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < dim; ++k) x[i][k] = initial_value(seed, i, k);
  return x;
}

std::vector<double> mean(const Matrix& x) {
  std::vector<double> m(x.front().size(), 0.0);
  for (const auto& row : x)
    for (std::size_t k = 0; k < m.size(); ++k) m[k] += row[k];
  for (double& v : m) v /= static_cast<double>(x.size());
  return m;
}

namespace {
// Replaces the rows of `members` by their mean.
void average_group(Matrix& x, const std::vector<int>& members) {
  const std::size_t dim = x.front().size();
  std::vector<double> m(dim, 0.0);
  for (int i : members)
    for (std::size_t k = 0; k < dim; ++k) m[k] += x[i][k];
  for (double& v : m) v /= static_cast<double>(members.size());
  for (int i : members) x[i] = m;
}

}  // namespace

RoundEffect step(const ProtocolOptions& protocol, const FailureModel& failures, int t, Matrix& x) {
  const int n = static_cast<int>(x.size());
  const std::size_t dim = x.front().size();
  RoundEffect effect;
  if (protocol.name == "allreduce") {
    const std::vector<int> alive = failures.alive_peers(t);
    if (*protocol.on_failure == FailureSemantics::abort) {
      effect.groups = 1;
      if (static_cast<int>(alive.size()) == n) {
        std::vector<int> all(alive);
        average_group(x, all);
        effect.bytes = collective_bytes(protocol.collective, static_cast<int>(alive.size()), dim);
      } else {
        effect.failed_groups = 1;
      }
    } else {  // survivors
      if (alive.size() >= 2) {
        effect.groups = 1;
        average_group(x, alive);
        effect.bytes = collective_bytes(protocol.collective, static_cast<int>(alive.size()), dim);
      }
    }
    return effect;
  }
  throw std::logic_error("oracle: no model of protocol " + protocol.name);
}

RoundRow measure(const Matrix& x, const std::vector<double>& reference) {
  const std::vector<double> m = mean(x);
  const double nd = static_cast<double>(x.size()) * static_cast<double>(m.size());
  RoundRow row;
  for (const auto& xi : x)
    for (std::size_t k = 0; k < m.size(); ++k) {
      row.variance += (xi[k] - m[k]) * (xi[k] - m[k]);
      row.error += (xi[k] - reference[k]) * (xi[k] - reference[k]);
    }
  row.variance /= nd;
  row.error /= nd;
  for (std::size_t k = 0; k < m.size(); ++k) row.mean_drift += (m[k] - reference[k]) * (m[k] - reference[k]);
  row.mean_drift /= static_cast<double>(m.size());
  return row;
}

TrialRecord run_trial(const AveragingOptions& raw, int n, int trial) {
  const AveragingOptions options = resolve(raw);
  const std::uint64_t seed = trial_seed(options.seed, trial);
  const FailureModel failures(seed, options.fail_rate, options.failure, n);
  Matrix x = initial_state(seed, n, options.dim);
  const std::vector<double> reference = mean(x);
  TrialRecord record;
  record.index = trial;
  record.seed = seed;
  RoundRow row = measure(x, reference);
  row.alive = n;
  record.rows.push_back(row);
  std::uint64_t bytes = 0;
  const double min_target = options.targets.back();
  for (int t = 1; t <= options.rounds; ++t) {
    if (options.stop_at_target && record.rows.back().variance < min_target) break;
    const RoundEffect effect = step(options.protocol, failures, t, x);
    bytes += effect.bytes;
    row = measure(x, reference);
    row.round = t;
    row.alive = failures.count_alive(t);
    row.groups = effect.groups;
    row.failed_groups = effect.failed_groups;
    row.bytes_sent = bytes;
    record.rows.push_back(row);
  }
  for (double target : options.targets) record.targets.push_back(rounds_to_target(record.rows, target));
  return record;
}

}  // namespace avb::oracle
