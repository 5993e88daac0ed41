// torchrun's dynamic-rendezvous rules (src/elastic/rendezvous_state.hpp), step
// by step with a hand-held clock: the expected states are those of
// torch.distributed.elastic's DynamicRendezvousHandler for the same moves.
#include <gtest/gtest.h>

#include "elastic/rendezvous_state.hpp"

namespace accel::detail::elastic {
namespace {

// Takes steps for `node` until it has to wait or is done.
JoinStep settle(RendezvousState& state, const std::string& node, const RendezvousLimits& limits, int64_t now) {
  for (int i = 0; i < 10; ++i) {
    JoinStep step = join_step(state, node, limits, now);
    if (step != JoinStep::kChanged) return step;
  }
  ADD_FAILURE() << "no settled state after 10 steps";
  return JoinStep::kWait;
}

TEST(RendezvousState, CompletesAtMaxNodesAtOnce) {
  RendezvousLimits limits{2, 2, 30000};
  RendezvousState state;
  EXPECT_EQ(settle(state, "b", limits, 0), JoinStep::kWait);
  EXPECT_FALSE(state.complete);
  EXPECT_EQ(settle(state, "a", limits, 1), JoinStep::kDone);
  EXPECT_TRUE(state.complete);
  // Ranks by node id, not by arrival.
  EXPECT_EQ(state.participants.at("a"), 0);
  EXPECT_EQ(state.participants.at("b"), 1);
  EXPECT_EQ(settle(state, "b", limits, 2), JoinStep::kDone);
}

TEST(RendezvousState, MinNodesCompleteAfterTheLastCall) {
  RendezvousLimits limits{2, 3, 1000};
  RendezvousState state;
  settle(state, "a", limits, 0);
  EXPECT_EQ(state.last_call_deadline_ms, 0) << "one node is below min_nodes: no last call yet";
  settle(state, "b", limits, 100);
  EXPECT_EQ(state.last_call_deadline_ms, 1100);
  EXPECT_EQ(settle(state, "a", limits, 1099), JoinStep::kWait);
  EXPECT_EQ(settle(state, "a", limits, 1100), JoinStep::kDone);
  EXPECT_TRUE(state.complete);
  EXPECT_EQ(state.participants.size(), 2u);
}

TEST(RendezvousState, ALateNodeWaitsAndTheRoundGivesWayWhenAllLeave) {
  RendezvousLimits limits{2, 3, 1000};
  RendezvousState state;
  settle(state, "a", limits, 0);
  settle(state, "b", limits, 0);
  settle(state, "a", limits, 1000);
  ASSERT_TRUE(state.complete);
  EXPECT_EQ(settle(state, "c", limits, 2000), JoinStep::kWait);
  EXPECT_EQ(state.wait_list, std::set<std::string>{"c"});
  EXPECT_EQ(state.round, 0);
  // The round's nodes see the waiting node, stop, and leave one by one.
  EXPECT_TRUE(remove_node(state, "a", limits));
  EXPECT_TRUE(state.complete) << "b is still in round 0";
  EXPECT_TRUE(remove_node(state, "b", limits));
  EXPECT_FALSE(state.complete);
  EXPECT_EQ(state.round, 1);
  // Everybody joins round 1; three of at most three complete it at once.
  settle(state, "c", limits, 3000);
  EXPECT_TRUE(state.wait_list.empty());
  settle(state, "a", limits, 3000);
  EXPECT_EQ(settle(state, "b", limits, 3000), JoinStep::kDone);
  EXPECT_EQ(state.participants, (std::map<std::string, int>{{"a", 0}, {"b", 1}, {"c", 2}}));
}

TEST(RendezvousState, ALostNodeShrinksTheNextRound) {
  RendezvousLimits limits{2, 3, 500};
  RendezvousState state;
  for (const char* node : {"a", "b", "c"}) settle(state, node, limits, 0);
  ASSERT_TRUE(state.complete);
  // c dies: a and b leave to restart, and wait while c is still listed.
  remove_node(state, "a", limits);
  remove_node(state, "b", limits);
  EXPECT_EQ(settle(state, "a", limits, 10), JoinStep::kWait);
  EXPECT_EQ(settle(state, "b", limits, 10), JoinStep::kWait);
  EXPECT_EQ(state.wait_list, (std::set<std::string>{"a", "b"}));
  // Its heartbeats stop; the observer removes it; round 1 opens.
  EXPECT_TRUE(remove_node(state, "c", limits));
  EXPECT_EQ(state.round, 1);
  settle(state, "a", limits, 20);
  settle(state, "b", limits, 20);
  EXPECT_EQ(settle(state, "a", limits, 520), JoinStep::kDone);
  EXPECT_EQ(state.participants, (std::map<std::string, int>{{"a", 0}, {"b", 1}}));
}

TEST(RendezvousState, LeavingBelowMinNodesCancelsTheLastCall) {
  RendezvousLimits limits{2, 3, 1000};
  RendezvousState state;
  settle(state, "a", limits, 0);
  settle(state, "b", limits, 0);
  ASSERT_NE(state.last_call_deadline_ms, 0);
  remove_node(state, "b", limits);
  EXPECT_EQ(state.last_call_deadline_ms, 0);
  EXPECT_EQ(settle(state, "a", limits, 5000), JoinStep::kWait) << "one node must not complete a 2:3 round";
}

TEST(RendezvousState, AFullRoundTakesNoMoreWaiters) {
  RendezvousLimits limits{1, 2, 0};
  RendezvousState state;
  settle(state, "a", limits, 0);
  settle(state, "b", limits, 0);
  ASSERT_TRUE(state.complete);
  EXPECT_EQ(settle(state, "c", limits, 0), JoinStep::kWait);
  EXPECT_TRUE(state.wait_list.empty()) << "no room in the next round either";
}

TEST(RendezvousState, ClosedTakesNobodyAndKeepsTheFirstReason) {
  RendezvousLimits limits{1, 2, 0};
  RendezvousState state;
  close(state, "node a gave up");
  close(state, "node b was stopped");
  EXPECT_EQ(join_step(state, "c", limits, 0), JoinStep::kClosed);
  EXPECT_EQ(state.closed_reason, "node a gave up");
}

TEST(RendezvousState, JsonRoundTripAndRefusal) {
  RendezvousLimits limits{2, 3, 1000};
  RendezvousState state;
  settle(state, "10.0.0.1_42", limits, 0);
  settle(state, "10.0.0.2_43", limits, 0);
  state.wait_list.insert("10.0.0.3_44");
  EXPECT_EQ(RendezvousState::from_json(state.to_json()), state);
  EXPECT_THROW(RendezvousState::from_json("{\"round\": 1}"), std::runtime_error);
  EXPECT_THROW(RendezvousState::from_json("not json"), std::exception);
}

}  // namespace
}  // namespace accel::detail::elastic
