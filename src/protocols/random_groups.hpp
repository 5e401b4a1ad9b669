// How protocol "random-groups" (the Moshpit paper's baseline) deals peers into groups.
#pragma once

#include <memory>

#include "protocols/protocol.hpp"

namespace avb {

// The group of each position 0..participants-1 of the round's shuffled order:
// r = max(1, participants / group_size) groups; position i < r*g goes to group
// i / g, and the leftovers i >= r*g are spread round-robin: group (i - r*g) mod r.
int random_group_of(int position, int participants, int group_size);
int random_group_count(int participants, int group_size);

}  // namespace avb
