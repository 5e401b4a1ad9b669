#include "protocols/resources.hpp"

#include <algorithm>

#include "protocols/protocol.hpp"

namespace avb {

double message_bytes(const ProtocolOptions& o, double length) {
  const double plain = 8 * length;
  if (o.quantizer.kind == QuantizerKind::none) return plain;
  const double coded = static_cast<double>(Quantizer(o.quantizer).encoded_bytes(static_cast<std::size_t>(length)));
  // A lattice code that fails to decode is answered by the values at full precision.
  return o.quantizer.kind == QuantizerKind::lattice ? coded + plain : coded;
}

ProtocolResources group_resources(const ProtocolOptions& o, const ResourceQuery& q, int largest_group) {
  ProtocolResources r;
  const int m = std::clamp(largest_group, 1, q.peers);
  const double model = static_cast<double>(q.model_dim);
  // A quantized all-reduce sends codes instead of doubles (never more: a code has
  // a header per message, which the ratio at the whole model length understates
  // only for vectors of a few coordinates; the factor 2 covers those).
  const double ratio = o.quantizer.kind == QuantizerKind::none ? 1.0 : std::min(1.0, 2 * message_bytes(o, model) / (8 * model));
  auto per_member = [&](Collective c) { return collective_volume<double>(c, m, model) / m; };
  Collective c = o.collective;
  double member = per_member(c);
  if (c == Collective::automatic) {  // whichever the protocol picks: the larger
    member = std::max(per_member(Collective::ring), per_member(Collective::doubling));
    c = q.peers == m ? choose_collective(m, q.model_dim) : Collective::butterfly;
  }
  r.round_bytes = q.peers * member * ratio;
  const Quantizer quantizer(o.quantizer);
  r.pattern = collective_pattern(c, m, q.model_dim, o.quantizer.kind == QuantizerKind::none ? nullptr : &quantizer);
  // A butterfly posts a part to every other member at once, and receives as many.
  r.messages_in_flight = c == Collective::butterfly ? 2.0 * (m - 1) : 2.0 + 2.0 * (c == Collective::tree);
  r.population_vectors = 1;
  r.population_bytes = 64;
  r.work_per_peer = 2.0 * static_cast<double>(q.dim) + 8;
  return r;
}

ProtocolResources graph_resources(const ProtocolOptions& o, const ResourceQuery& q, double message) {
  ProtocolResources r;
  const GraphFootprint f = graph_footprint(*o.topology, q.peers);
  r.round_bytes = f.sends * message;
  r.pattern = {1, message, f.max_degree * message};
  r.messages_in_flight = 2 * f.max_degree + 2;
  r.population_vectors = 1;
  r.work_per_peer = (f.sends / q.peers + 1) * (static_cast<double>(q.dim) + 1) + 40;
  return r;
}

}  // namespace avb
