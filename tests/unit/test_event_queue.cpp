// The event loop's queue (sim/event_queue.hpp): earliest first, ties in the order
// scheduled, against a plain sorted list on a randomized schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "sim/event_queue.hpp"

namespace avb {
namespace {

TEST(EventQueue, TakesTheEarliestFirstAndTiesInTheOrderScheduled) {
  EventQueue q;
  q.reset(-5.0);
  q.at(2.0, 0, 0);
  q.at(-3.5, 1, 0);  // before the round's zero: the runners' starts are <= 0
  q.at(2.0, 2, 0);
  q.at(-0.0, 3, 0);
  q.at(0.0, 4, 0);
  q.at(1e-300, 5, 0);
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.pop().peer);
  EXPECT_EQ(order, (std::vector<int>{1, 3, 4, 5, 0, 2}));
  EXPECT_EQ(q.now(), 2.0);
}

TEST(EventQueue, RefusesAnEventBeforeTheLastOneTaken) {
  EventQueue q;
  q.at(1.0, 0, 0);
  q.at(2.0, 1, 0);
  EXPECT_EQ(q.pop().time, 1.0);
  q.at(1.0, 2, 0);  // now is allowed
  EXPECT_THROW(q.at(0.5, 3, 0), Error);
  q.reset();
  q.at(0.5, 3, 0);  // a new round starts over
  EXPECT_EQ(q.pop().peer, 3);
  EXPECT_THROW(q.advance_to(0.25), Error);
}

TEST(EventQueue, AdvancesOnlyWhenNothingIsDueByThen) {
  EventQueue q;
  q.at(1.0, 0, 0);
  q.at(1.0, 1, 0);
  q.at(3.0, 2, 0);
  EXPECT_EQ(q.pop().peer, 0);
  EXPECT_FALSE(q.advance_to(1.5));  // peer 1 is still due at 1.0
  EXPECT_EQ(q.pop().peer, 1);
  EXPECT_FALSE(q.advance_to(3.0));  // due at that very time: it goes first
  EXPECT_TRUE(q.advance_to(1.5));
  EXPECT_EQ(q.now(), 1.5);
  q.at(1.5, 3, 0);
  q.at(2.5, 4, 0);
  EXPECT_EQ(q.pop().peer, 3);
  EXPECT_EQ(q.pop().peer, 4);
  EXPECT_EQ(q.pop().peer, 2);
  EXPECT_TRUE(q.advance_to(7.0));  // nothing left
  EXPECT_TRUE(q.empty());
  // Events at the very time the clock moved to, before and after a later one.
  q.at(7.0, 5, 0);
  q.at(9.0, 6, 0);
  q.at(7.0, 7, 0);
  EXPECT_TRUE(q.advance_to(7.0) == false);
  EXPECT_EQ(q.pop().peer, 5);
  EXPECT_EQ(q.pop().peer, 7);
  EXPECT_TRUE(q.advance_to(8.0));
  q.at(8.0, 8, 0);
  q.at(8.0, 9, 0);
  EXPECT_EQ(q.pop().peer, 8);
  EXPECT_EQ(q.pop().peer, 9);
  EXPECT_EQ(q.pop().peer, 6);
  EXPECT_TRUE(q.empty());
}

// As the event loop uses it: each event taken schedules up to three more at or
// after it, many at the very same instant. The reference keeps every event in a
// list and takes the least (time, order).
TEST(EventQueue, AgreesWithASortedListOnARandomSchedule) {
  int advanced = 0;
  for (std::uint64_t seed : {1u, 2u, 3u, 2026u, 7u, 11u, 13u, 17u}) {
    SCOPED_TRACE(seed);  // replays the schedule
    std::mt19937_64 rng(seed);
    EventQueue q;
    std::vector<std::tuple<double, int, int>> reference;  // time, order, id
    int next = 0;
    auto schedule = [&](double time) {
      q.at(time, next, 0, next);
      reference.emplace_back(time, next, next);
      ++next;
    };
    for (int i = 0; i < 200; ++i) schedule(-std::ldexp(static_cast<double>(rng() % 1000), -10));
    std::uniform_int_distribution<int> fan(0, 3), kind(0, 2);
    std::exponential_distribution<double> gap(1.0);
    for (int taken = 0; !q.empty(); ++taken) {
      const Event e = q.pop();
      const auto least = std::min_element(reference.begin(), reference.end());
      ASSERT_EQ(e.arg, std::get<2>(*least)) << "event " << taken;
      ASSERT_EQ(e.time, std::get<0>(*least));
      reference.erase(least);
      if (next > 8000) continue;
      for (int k = fan(rng); k > 0; --k) {
        const int how = kind(rng);
        const double time = how == 0 ? e.time : e.time + (how == 1 ? 1e-7 : gap(rng));
        if (how == 1 && k == 1 && q.advance_to(time)) {
          // Done at once, as the swarm's replies are: nothing may be due at or before it.
          for (const auto& r : reference) ASSERT_GT(std::get<0>(r), time) << "event " << taken;
          ASSERT_EQ(q.now(), time);
          ++advanced;
          continue;
        }
        schedule(time);
      }
    }
    EXPECT_TRUE(reference.empty());
  }
  EXPECT_GT(advanced, 40);  // the shortcut was taken, not only refused
}

}  // namespace
}  // namespace avb
