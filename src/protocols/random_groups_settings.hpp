// random-groups' own settings (protocols/random_groups.cpp): the struct both forms
// take and its declaration table, which ProtocolOptions' table
// (protocols/options.hpp) visits and its catalog row takes its flags from.
#pragma once

#include <concepts>
#include <type_traits>

#include "core/settings.hpp"

namespace avb {

struct RandomGroupsSettings {
  int group_size = 32;  // the target group size (leftovers make some groups one larger)
};

template <class S, class Visitor>
  requires std::same_as<std::remove_const_t<S>, RandomGroupsSettings>
void for_each_setting(S& s, Visitor&& v) {
  v.integer("--group-size", s.group_size, IntRange{2, kNoIntLimit}, "peers per group, an integer >= 2", true);
}

}  // namespace avb
