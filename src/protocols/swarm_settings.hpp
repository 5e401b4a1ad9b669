// SwarmSGD's own settings (protocols/swarm*.cpp): the struct both forms take and
// its declaration table, which ProtocolOptions' table (protocols/options.hpp)
// visits and its catalog row takes its flags from.
#pragma once

#include <concepts>
#include <string_view>
#include <type_traits>

#include "core/enum_names.hpp"
#include "core/settings.hpp"

namespace avb {

// SwarmSGD's two forms of an interaction between initiator i and partner j.
enum class SwarmMode {
  blocking,      // both take the mean of their pre-local-step models, then re-apply their own progress
  non_blocking,  // i averages with j's last published model; j is not written
};
inline constexpr EnumNames<SwarmMode, 2> kSwarmModeNames{
    "--mode", {{{SwarmMode::blocking, "blocking"}, {SwarmMode::non_blocking, "non-blocking"}}}};
SwarmMode parse_swarm_mode(std::string_view name);  // throws ConfigError (--mode)
std::string_view to_string(SwarmMode mode);

// When a swarm peer initiates interactions in a round of pure averaging (in SGD a
// peer initiates after its local steps instead).
enum class SwarmClock {
  round,    // once per round
  poisson,  // at the ticks of its own rate-1 Poisson clock, a round being one unit of
            // time: every interaction's initiator is then uniform and independent of
            // the others, the model of the analysis (docs/protocols.md, swarm)
};
inline constexpr EnumNames<SwarmClock, 2> kSwarmClockNames{
    "--clock", {{{SwarmClock::round, "round"}, {SwarmClock::poisson, "poisson"}}}};
SwarmClock parse_swarm_clock(std::string_view name);  // throws ConfigError (--clock)
std::string_view to_string(SwarmClock clock);

struct SwarmSettings {
  SwarmMode mode = SwarmMode::blocking;  // who is written in an interaction (docs/protocols.md)
  SwarmClock clock = SwarmClock::round;
};

template <class S, class Visitor>
  requires std::same_as<std::remove_const_t<S>, SwarmSettings>
void for_each_setting(S& s, Visitor&& v) {
  v.word("--mode", s.mode, kSwarmModeNames,
         "blocking (both peers average, local progress re-applied) or non-blocking (the initiator averages with the "
         "partner's last published model)",
         true);
  v.word("--clock", s.clock, kSwarmClockNames,
         "averaging_bench only: a peer initiates once per round (round) or at the ticks of its own rate-1 Poisson "
         "clock, one round being one unit of time (poisson)",
         true);
}

}  // namespace avb
