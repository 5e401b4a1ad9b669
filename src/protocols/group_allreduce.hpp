// All-reduce within a group, by the algorithm that suits the vector and group size.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/comm.hpp"
#include "core/enum_names.hpp"
#include "protocols/doubling_allreduce.hpp"
#include "protocols/ring_allreduce.hpp"

namespace avb {

enum class Collective {
  automatic,  // the cheaper of the two under the alpha-beta model below
  ring,       // bandwidth-optimal: 2(n-1) messages of S/n bytes
  doubling,   // latency-optimal: about log2(n) messages of S bytes
  tree,       // binomial reduce to rank 0, then binomial broadcast: 2(n-1) messages
              // of S bytes in all, the fewest of the three, in 2 log2(n) steps. Never
              // the fastest under the alpha-beta model, but the cheapest to
              // simulate: under SMPI wall time grows with the message count.
};
inline constexpr EnumNames<Collective, 4> kCollectiveNames{
    "--collective",
    {{{Collective::automatic, "auto"},
     {Collective::ring, "ring"},
     {Collective::doubling, "doubling"},
     {Collective::tree, "tree"}}}};

Collective parse_collective(std::string_view name);  // throws ConfigError (--collective)
std::string_view to_string(Collective c);

// The algorithm `automatic` picks for n members and `length` doubles: the one with
// the lower alpha-beta cost, taking one message's latency to be worth 8 KiB of
// transfer (50 us at 1 Gb/s, roughly the platforms avbench simulates).
Collective choose_collective(int n, std::size_t length);

// Bytes all members send together for one all-reduce.
std::uint64_t collective_bytes(Collective c, int n, std::size_t length);

class GroupAllreduce {
 public:
  explicit GroupAllreduce(Collective c = Collective::automatic) : choice_(c) {}
  // The mean over comm's ranks, in place, identical bits on every rank.
  void average(Comm& comm, std::span<double> x);

 private:
  void tree_average(Comm& comm, std::span<double> x);

  Collective choice_;
  RingAllreduce ring_;
  DoublingAllreduce doubling_;
  std::vector<double> incoming_;
};

}  // namespace avb
