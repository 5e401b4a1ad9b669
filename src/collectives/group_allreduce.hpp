// All-reduce within a group, by the algorithm that suits the vector and group size,
// and how a group's communicator is made.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/comm.hpp"
#include "core/enum_names.hpp"
#include "collectives/butterfly_allreduce.hpp"
#include "collectives/doubling_allreduce.hpp"
#include "collectives/ring_allreduce.hpp"

namespace avb {

enum class Collective {
  automatic,  // allreduce: the cheaper of ring and doubling under the alpha-beta model
              // below; moshpit, random-groups: the butterfly
  ring,       // bandwidth-optimal: 2(n-1) messages of S/n bytes
  doubling,   // latency-optimal: about log2(n) messages of S bytes
  tree,       // binomial reduce to rank 0, then binomial broadcast: 2(n-1) messages
              // of S bytes in all, the fewest of the three, in 2 log2(n) steps. Never
              // the fastest under the alpha-beta model, but the cheapest to
              // simulate: under SMPI wall time grows with the message count.
  butterfly,  // reduce-scatter then all-gather, every member to every other in one
              // step each: the only one that models a failed member's partial delivery
  mpi,        // the MPI library's own MPI_Allreduce(MPI_SUM) on the group's
              // communicator (needs --groups comm); its traffic is invisible to the
              // counter, so it is charged the ring's bytes (collective_bytes)
};
inline constexpr EnumNames<Collective, 6> kCollectiveNames{
    "--collective",
    {{{Collective::automatic, "auto"},
     {Collective::ring, "ring"},
     {Collective::doubling, "doubling"},
     {Collective::tree, "tree"},
     {Collective::butterfly, "butterfly"},
     {Collective::mpi, "mpi"}}}};

// How a round's groups are made (--groups).
enum class GroupForm {
  view,  // a rank-translating view of the trial's communicator (Comm::subgroup): free
  comm,  // an MPI communicator per group (Comm::create_group), made inside the round
};
inline constexpr EnumNames<GroupForm, 2> kGroupFormNames{
    "--groups", {{{GroupForm::view, "view"}, {GroupForm::comm, "comm"}}}};
std::string_view to_string(GroupForm form);

// The group `members` (ranks of `world`, in the order that becomes the group's) in
// the form asked for. Called by the members only.
Comm form_group(const Comm& world, std::span<const int> members, GroupForm form);

Collective parse_collective(std::string_view name);  // throws ConfigError (--collective)
std::string_view to_string(Collective c);

// The algorithm `automatic` picks for n members and `length` doubles: the one with
// the lower alpha-beta cost, taking one message's latency to be worth 8 KiB of
// transfer (50 us at 1 Gb/s, roughly the platforms avbench simulates).
Collective choose_collective(int n, std::size_t length);

// Bytes all members send together for one all-reduce: as an exact count
// (Number = std::uint64_t, the trace's counter) or as a bound that cannot wrap
// (Number = double, the run's resource estimate).
// k with 2^k = p, for p a power of two (the rounds of recursive doubling).
inline int log2_exact(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

template <class Number>
Number collective_volume(Collective c, int n, Number length) {
  if (n < 2) return 0;
  if (c == Collective::automatic) c = choose_collective(n, static_cast<std::size_t>(length));
  const Number vector = 8 * length;
  // The butterfly moves each part to its reducer and back, as the ring does; mpi
  // is charged the ring's bytes (its own traffic is not observable).
  if (c != Collective::doubling) return 2 * static_cast<Number>(n - 1) * vector;
  const int p2 = floor_power_of_two(n);
  const auto extra = static_cast<Number>(n - p2);
  return (2 * extra + static_cast<Number>(p2) * static_cast<Number>(log2_exact(p2))) * vector;
}
inline std::uint64_t collective_bytes(Collective c, int n, std::size_t length) {
  return collective_volume<std::uint64_t>(c, n, length);
}

class GroupAllreduce {
 public:
  explicit GroupAllreduce(Collective c = Collective::automatic) : choice_(c) {}
  // The mean over comm's ranks, in place, identical bits on every rank.
  void average(Comm& comm, std::span<double> x);

 private:
  void tree_average(Comm& comm, std::span<double> x);
  void mpi_average(Comm& comm, std::span<double> x);

  Collective choice_;
  RingAllreduce ring_;
  DoublingAllreduce doubling_;
  ButterflyAllreduce butterfly_;
  std::vector<double> incoming_;
};

}  // namespace avb
