// The rendezvous on a real c10d TCPStore (src/elastic/store_rendezvous.hpp):
// several agents in one process on a loopback endpoint, each with its own
// connections and heartbeats, as agents on several machines would have.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>

#include "elastic/store_rendezvous.hpp"
#include "state/free_port.hpp"

namespace accel::detail::elastic {
namespace {

using accel::test::free_loopback_port;

RendezvousOptions options(int port, int min_nodes, int max_nodes) {
  RendezvousOptions result;
  result.endpoint_host = "127.0.0.1";
  result.endpoint_port = port;
  result.run_id = "test";
  result.limits = {min_nodes, max_nodes, 200};
  result.join_timeout = std::chrono::seconds(20);
  result.keep_alive_interval = std::chrono::milliseconds(100);
  result.keep_alive_max_attempt = 3;
  result.store_timeout = std::chrono::seconds(10);
  return result;
}

std::future<Round> join(StoreRendezvous& agent) {
  return std::async(std::launch::async, [&agent] { return agent.next_round(nullptr); });
}

// membership_change() until it names a reason (up to 10 s).
std::string wait_for_change(StoreRendezvous& agent) {
  for (int i = 0; i < 200; ++i) {
    if (auto reason = agent.membership_change()) return *reason;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "no change";
}

TEST(StoreRendezvous, GrowsWhenANodeArrivesAndShrinksWhenOneFallsSilent) {
  const int port = free_loopback_port();
  StoreRendezvous a(options(port, 2, 3));
  EXPECT_TRUE(a.hosts_store()) << "the first agent on the endpoint's machine hosts the store";
  StoreRendezvous b(options(port, 2, 3));
  EXPECT_FALSE(b.hosts_store());

  auto round_a = join(a), round_b = join(b);
  Round first_a = round_a.get(), first_b = round_b.get();
  EXPECT_EQ(first_a.round, 0);
  EXPECT_EQ(first_a.nnodes, 2);
  EXPECT_EQ(first_a.group_rank + first_b.group_rank, 1);
  EXPECT_EQ(a.membership_change(), std::nullopt);

  // A third node arrives: it waits, and the round's nodes see it.
  auto c = std::make_unique<StoreRendezvous>(options(port, 2, 3));
  auto round_c = join(*c);
  EXPECT_NE(wait_for_change(a).find("wait to join"), std::string::npos);
  round_a = join(a);
  round_b = join(b);
  Round second = round_a.get();
  EXPECT_EQ(second.round, 1);
  EXPECT_EQ(second.nnodes, 3);
  EXPECT_EQ(round_b.get().nnodes, 3);
  EXPECT_EQ(round_c.get().nnodes, 3);

  // Rank 0 publishes its address; the others read it.
  StoreRendezvous* rank0 = second.nodes[0] == a.node_id() ? &a : second.nodes[0] == b.node_id() ? &b : c.get();
  rank0->publish_master(second, "127.0.0.1", 12345);
  EXPECT_EQ(a.wait_for_master(second), (std::pair<std::string, int>{"127.0.0.1", 12345}));

  // c is gone without leaving (kill -9): its heartbeats stop, and it is removed.
  const std::string lost = c->node_id();
  c.reset();
  std::string change = wait_for_change(a);
  EXPECT_NE(change.find(lost), std::string::npos) << change;
  EXPECT_NE(change.find("left round 1"), std::string::npos) << change;
  std::vector<std::string> events = a.take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("sent no heartbeat"), std::string::npos) << events[0];

  round_a = join(a);
  round_b = join(b);
  Round third = round_a.get();
  EXPECT_EQ(third.round, 2);
  EXPECT_EQ(third.nnodes, 2);
  round_b.get();

  // One agent gives up: the others learn it at their next call.
  a.close("node a gave up");
  EXPECT_NE(wait_for_change(b).find("closed: node a gave up"), std::string::npos);
  EXPECT_THROW(b.next_round(nullptr), RendezvousClosed);
}

TEST(StoreRendezvous, JoinTimeoutNamesWhoCame) {
  RendezvousOptions lonely = options(free_loopback_port(), 2, 2);
  lonely.join_timeout = std::chrono::milliseconds(300);
  StoreRendezvous a(lonely);
  try {
    a.next_round(nullptr);
    FAIL() << "one node completed a round of 2";
  } catch (const RendezvousError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("1 node(s) of at least 2 joined within join_timeout"), std::string::npos) << message;
    EXPECT_NE(message.find(a.node_id()), std::string::npos) << message;
  }
}

TEST(StoreRendezvous, StopEndsTheWait) {
  StoreRendezvous a(options(free_loopback_port(), 2, 2));
  EXPECT_THROW(a.next_round([] { return true; }), RendezvousError);
}

TEST(StoreRendezvous, AnEndpointThatDoesNotResolveIsNamed) {
  RendezvousOptions bad = options(29400, 1, 1);
  bad.endpoint_host = "no-such-host.invalid";
  try {
    StoreRendezvous agent(bad);
    FAIL() << "connected to " << bad.endpoint_host;
  } catch (const RendezvousError& error) {
    EXPECT_NE(std::string(error.what()).find("no-such-host.invalid:29400 does not resolve"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace accel::detail::elastic
