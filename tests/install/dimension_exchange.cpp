#include "dimension_exchange.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "protocols/population.hpp"
#include "protocols/time_model.hpp"

namespace external {
namespace {

constexpr int kTag = 4242;

// log2(n); the protocol needs a power of two (>= 2) peers.
int dimensions(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  if (n < 2 || (1 << bits) != n)
    throw avb::ConfigError("--protocol dimension-exchange: needs a power of 2 (>= 2) peers, not " +
                           std::to_string(n));
  return bits;
}

int partner(int peer, int t, int bits) { return peer ^ (1 << ((t - 1) % bits)); }

class DimensionExchange final : public avb::Protocol {
 public:
  explicit DimensionExchange(int n) : bits_(dimensions(n)) {}

  void step(std::span<double> x, avb::Round& round) override {
    const int me = round.world.rank();
    const int other = partner(me, round.t, bits_);
    if (!round.failures.alive(round.t, me) || !round.failures.alive(round.t, other)) return;
    received_.resize(x.size());
    round.world.sendrecv<double>(x, other, received_, other, kTag);
    // a + b on one side, b + a on the other: the same bits on both peers.
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = 0.5 * (x[k] + received_[k]);
    if (me < other) round.counters.groups += 1;
  }

 private:
  int bits_;
  std::vector<double> received_;
};

// The same rule on the whole population at once (the sequential engine).
class SequentialDimensionExchange final : public avb::SequentialProtocol {
 public:
  explicit SequentialDimensionExchange(int n) : bits_(dimensions(n)) {}

  avb::RoundEffect step(avb::Population& x, const avb::PopulationRound& round) override {
    avb::RoundEffect effect;
    const double message = static_cast<double>(x.model_dim * sizeof(double));
    for (int i = 0; i < x.n; ++i) {
      const int j = partner(i, round.t, bits_);
      if (j < i || !round.alive[static_cast<std::size_t>(i)] || !round.alive[static_cast<std::size_t>(j)]) continue;
      auto a = x.peer(i), b = x.peer(j);
      for (std::size_t k = 0; k < a.size(); ++k) a[k] = b[k] = 0.5 * (a[k] + b[k]);
      effect.groups += 1;
      effect.bytes += 2 * x.model_dim * sizeof(double);
      round.send(i, j, message);  // charged to the round's time by endpoint
      round.send(j, i, message);
    }
    return effect;
  }

 private:
  int bits_;
};

std::unique_ptr<avb::Protocol> make(const avb::ProtocolOptions&, avb::Comm& world) {
  return std::make_unique<DimensionExchange>(world.size());
}

std::unique_ptr<avb::SequentialProtocol> make_sequential(const avb::ProtocolOptions&, int n_peers) {
  return std::make_unique<SequentialDimensionExchange>(n_peers);
}

}  // namespace

const avb::ProtocolInfo& dimension_exchange_info() {
  static const avb::ProtocolInfo info{
      .name = "dimension-exchange",
      .summary = "hypercube dimension exchange: pairs differing in one rank bit average, one bit per round",
      .default_semantics = avb::FailureSemantics::survivors,
      .semantics = {avb::FailureSemantics::survivors},
      .forms = {.make = make, .sequential = make_sequential}};
  return info;
}

}  // namespace external
