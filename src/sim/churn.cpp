#include "sim/churn.hpp"

#include <vector>

namespace avb {

namespace {
constexpr int kJoinTag = 0x4a01;
}

bool load_joiners(Comm& comm, const FailureModel& failures, int t, std::span<double> x) {
  if (!has_joiners(failures.kind())) return false;
  const int me = comm.rank();
  std::vector<MPI_Request> requests;
  bool loaded = false;
  // Every peer evaluates every peer's join and donor (pure functions of the seed),
  // so sends and receives match without any negotiation.
  const std::vector<int> donors = failures.donors(t);
  for (int p = 0; p < static_cast<int>(donors.size()); ++p) {
    const int donor = donors[static_cast<std::size_t>(p)];
    if (donor < 0) continue;
    if (donor == me) comm.isend(std::span<const double>(x.data(), x.size()), p, kJoinTag, requests);
    if (p == me) {
      comm.irecv(x, donor, kJoinTag, requests);
      loaded = true;
    }
  }
  // A donor is never a joiner, so no peer both sends and overwrites x.
  comm.wait_all(requests, "churn: a joiner's state");
  return loaded;
}

}  // namespace avb
