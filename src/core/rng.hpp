// Keyed counter-based random numbers (Random123 Philox4x64-10).
//
// Every random quantity in avbench is a pure function of
//   key     = (seed, stream)          which experiment, which purpose
//   counter = (round, peer, draw)     where in the run, whose, which number
// so the same draw comes out whatever the rank count, engine or call order.
// Nothing here keeps state between calls; a Stream is just a key.
#pragma once

#include <cstdint>

namespace avb {

// One key per purpose, so that adding draws to one purpose never shifts another.
// The numeric values are part of the reproducibility contract: never renumber.
enum class StreamId : std::uint64_t {
  failures = 1,        // alive(t, peer)
  initial_values = 2,  // x_i at round 0
  placement = 3,       // grid cells (Moshpit)
  group_shuffle = 4,   // orders within groups
  partner = 5,         // gossip / swarm partner choice
  sgd_noise = 6,
  data = 7,
  dither = 8,          // quantizer dithering
  failure_phase = 9,   // where in a round a peer fails (partial semantics)
  trial_seeds = 10,    // the seed of each trial, from the run's seed
  topology = 11,       // random graphs (random-regular)
  matching = 12,       // pairwise gossip's matchings
  clock = 13,          // swarm's Poisson clocks
  local_steps = 14,    // random local-step counts (--local-steps-dist geometric)
  stragglers = 15,     // which peers straggle
  churn = 16,          // churn: failure and join rounds, donors
  platform = 17,       // generated platforms' host speeds and link bandwidths (scripts/avbench platform too)
  availability = 18,  // scripts/avbench availability's diurnal traces (drawn in Python only; reserved here)
  work_jitter = 19,    // each peer's lognormal work factor per round (--straggler-sigma)
  epidemic = 20,       // the peers each peer sends to in a round (--topology epidemic:S)
  model_init = 21,     // the MLP's initial weights (--objective mlp)
  test = 1000,         // reserved for tests
};

class Stream {
 public:
  Stream(std::uint64_t seed, StreamId id) : seed_(seed), id_(static_cast<std::uint64_t>(id)) {}

  // 64 uniformly distributed bits for (round, peer, draw).
  std::uint64_t bits(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const;

  // Uniform double in [0, 1) with 53 random bits.
  double uniform(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const;

  // Uniform double in (0, 1]: safe to take the logarithm of.
  double uniform_open0(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const;

  // Standard normal by Box-Muller (cosine branch) from one Philox block. Our own
  // transform, because std::normal_distribution is implementation-defined.
  double normal(std::uint64_t round, std::uint64_t peer, std::uint64_t draw) const;

  // Uniform integer in [0, n), n > 0, without modulo bias (Lemire's multiply-shift
  // with rejection; rejections consume further words of the same block and then
  // further blocks, all keyed by the same (round, peer, draw)).
  std::uint64_t below(std::uint64_t n, std::uint64_t round, std::uint64_t peer,
                      std::uint64_t draw) const;

  // The raw Philox output for (round, peer, draw, extra): four 64-bit words, for
  // callers that pack several small draws into one block.
  struct Block {
    std::uint64_t w[4];
  };
  Block block(std::uint64_t round, std::uint64_t peer, std::uint64_t draw, std::uint64_t extra = 0) const;

  std::uint64_t seed() const { return seed_; }

 private:

  std::uint64_t seed_;
  std::uint64_t id_;
};

}  // namespace avb
