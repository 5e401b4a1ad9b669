#include "collectives/group_allreduce.hpp"

#include <string>

#include "core/error.hpp"
#include "core/reduce.hpp"

namespace avb {

Collective parse_collective(std::string_view name) { return kCollectiveNames.parse(name); }

std::string_view to_string(Collective c) { return kCollectiveNames.name(c); }

std::string_view to_string(GroupForm form) { return kGroupFormNames.name(form); }

Comm form_group(const Comm& world, std::span<const int> members, GroupForm form) {
  return form == GroupForm::comm ? world.create_group(members) : world.subgroup(members);
}


Collective choose_collective(int n, std::size_t length) {
  if (n <= 2) return Collective::doubling;  // one exchange either way
  constexpr double kLatencyBytes = 8192.0;
  const double bytes = 8.0 * static_cast<double>(length);
  const int p2 = floor_power_of_two(n);
  const double doubling_steps = log2_exact(p2) + (p2 == n ? 0 : 2);
  const double ring_cost = 2.0 * (n - 1) * (kLatencyBytes + bytes / n);
  const double doubling_cost = doubling_steps * (kLatencyBytes + bytes);
  return ring_cost < doubling_cost ? Collective::ring : Collective::doubling;
}

void GroupAllreduce::average(Comm& comm, std::span<double> x) {
  // Chosen for the length the messages stand for (--model-dim), as the model would.
  const Collective c =
      choice_ == Collective::automatic ? choose_collective(comm.size(), comm.model_length(x.size())) : choice_;
  if (c == Collective::ring) ring_.average(comm, x);
  else if (c == Collective::doubling) doubling_.average(comm, x);
  else if (c == Collective::butterfly) butterfly_.average(comm, x);
  else if (c == Collective::mpi) mpi_average(comm, x);
  else tree_average(comm, x);
}

void GroupAllreduce::mpi_average(Comm& comm, std::span<double> x) {
  const int n = comm.size();
  if (n == 1) return;
  if (!comm.is_communicator())
    throw Error("GroupAllreduce: --collective mpi on a group view (resolve() requires --groups comm)");
  const int count = static_cast<int>(x.size());
  if (comm.watch() && comm.watch()->polls()) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, x.data(), count, MPI_DOUBLE, MPI_SUM, comm.raw(), &request),
              "MPI_Iallreduce");
    comm.wait(request, "MPI_Iallreduce");
  } else {
    Watch::Waiting waiting(comm.watch(), "MPI_Allreduce", -1);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, x.data(), count, MPI_DOUBLE, MPI_SUM, comm.raw()), "MPI_Allreduce");
  }
  for (double& v : x) v /= static_cast<double>(n);
  // Charge this member its share of the ring's traffic, so that the members' sum
  // is collective_bytes(mpi) and the messages are the ring's 2(n-1) each.
  const std::uint64_t total = collective_bytes(Collective::mpi, n, x.size());
  const auto members = static_cast<std::uint64_t>(n), me = static_cast<std::uint64_t>(comm.rank());
  comm.traffic().bytes_sent += total / members + (me < total % members ? 1 : 0);
  comm.traffic().messages_sent += 2ull * (members - 1);
}

void GroupAllreduce::tree_average(Comm& comm, std::span<double> x) {
  constexpr int kTreeTag = 103;
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) return;
  incoming_.resize(x.size());
  std::span<double> in(incoming_.data(), x.size());
  // Reduce: rank r adds the partial sums of r+1, r+2, r+4, ... (below its lowest
  // set bit) and passes the result to r - lowbit(r); the order depends on n alone.
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (r & mask) {
      comm.ssend<double>(x, r - mask, kTreeTag);
      break;
    }
    if (r + mask < n) {
      comm.recv<double>(in, r + mask, kTreeTag);
      add_into(x, in);
    }
  }
  if (r == 0)
    for (double& v : x) v /= static_cast<double>(n);
  // Broadcast down the same tree: receive from the parent, then serve the
  // children from the highest subtree down.
  if (r != 0) comm.recv<double>(x, r - mask, kTreeTag);
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (r + mask < n) comm.ssend<double>(x, r + mask, kTreeTag);
}

}  // namespace avb
