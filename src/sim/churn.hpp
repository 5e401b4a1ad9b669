// Churn (docs/failures.md): in a round where a new peer takes a departed peer's
// slot, it loads its state from a live peer (FailureModel::donor).
#pragma once

#include <span>

#include "core/comm.hpp"
#include "sim/failures.hpp"

namespace avb {

// At the start of round t, every peer calls this: each donor sends its `x` to the
// peers joining in round t that chose it, and each joiner receives into its `x`.
// The transfer is real traffic on `comm` (counted). Returns true on a peer that
// joined in round t and loaded a donor's state; false everywhere else, and on a
// joiner with no donor (nobody was up in both t - 1 and t), which keeps its values.
bool load_joiners(Comm& comm, const FailureModel& failures, int t, std::span<double> x);

}  // namespace avb
