// CHOCO-Gossip's own settings (protocols/choco.cpp): the struct both forms take
// and its declaration table, which ProtocolOptions' table (protocols/options.hpp)
// visits and its catalog row takes its flags from.
#pragma once

#include <concepts>
#include <type_traits>

#include "core/settings.hpp"

namespace avb {

struct ChocoSettings {
  double gamma = 1.0;  // the consensus step size, in (0, 1]
};

template <class S, class Visitor>
  requires std::same_as<std::remove_const_t<S>, ChocoSettings>
void for_each_setting(S& s, Visitor&& v) {
  v.real("--gamma", s.gamma, interval(0, 1, true),
         "consensus step size in (0, 1]; 1 with --quantizer none is plain gossip, a compressing quantizer needs a "
         "smaller one",
         true);
}

}  // namespace avb
