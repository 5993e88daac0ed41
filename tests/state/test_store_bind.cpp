// Where rank 0's rendezvous store listens, as `ss -ltn` reports it: on LibTorch
// 2.x on MASTER_ADDR's address only (the store has no authentication), on 1.13
// on every interface (it cannot be told otherwise; ProcessGroup warns then).
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "state/c10d_adapter.hpp"
#include "state/free_port.hpp"

namespace {

namespace adapter = accel::detail::c10d_adapter;

using accel::test::free_loopback_port;

// The local addresses `ss -ltn` lists as listening on `port` ("127.0.0.1",
// "0.0.0.0", "*", "[::]", ...).
std::set<std::string> listening_addresses(int port) {
  std::set<std::string> addresses;
  FILE* ss = ::popen("ss -ltnH 2>/dev/null", "r");
  if (ss == nullptr) return addresses;
  char line[512];
  const std::string suffix = ":" + std::to_string(port);
  while (std::fgets(line, sizeof line, ss) != nullptr) {
    std::istringstream fields(line);
    std::string state, receive_queue, send_queue, local;
    fields >> state >> receive_queue >> send_queue >> local;
    if (local.size() > suffix.size() && local.compare(local.size() - suffix.size(), suffix.size(), suffix) == 0) {
      addresses.insert(local.substr(0, local.size() - suffix.size()));
    }
  }
  ::pclose(ss);
  return addresses;
}

TEST(StoreBind, RankZerosStoreListensWhereThisLibTorchCan) {
  if (std::system("ss -V >/dev/null 2>&1") != 0) GTEST_SKIP() << "ss (iproute2) is not installed";
  const int port = free_loopback_port();
  adapter::StorePtr store = adapter::make_tcp_store("127.0.0.1", port, true, std::chrono::seconds(10));
  const std::set<std::string> addresses = listening_addresses(port);
  ASSERT_FALSE(addresses.empty()) << "ss lists nothing listening on port " << port;
#if TORCH_VERSION_MAJOR >= 2
  // Every 2.x release the project builds takes a socket of ours (masterListenFd):
  // had detection failed, the store would quietly listen everywhere again.
  EXPECT_TRUE(adapter::kStoreListensOnMasterAddrOnly);
  EXPECT_EQ(addresses, std::set<std::string>{"127.0.0.1"}) << "the store must listen on MASTER_ADDR alone";
#else
  EXPECT_FALSE(adapter::kStoreListensOnMasterAddrOnly);
  EXPECT_EQ(addresses.count("127.0.0.1"), 0u) << "1.13 was thought unable to bind one address; update the adapter";
#endif
}

}  // namespace
