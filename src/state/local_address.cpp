#include "state/local_address.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace accel::detail {

std::string local_address_towards(const std::string& remote) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(remote.c_str(), "9", &hints, &found) != 0) return {};
  std::string local;
  for (addrinfo* candidate = found; candidate != nullptr && local.empty(); candidate = candidate->ai_next) {
    int fd = ::socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage self{};
    socklen_t length = sizeof self;
    char host[NI_MAXHOST];
    if (::connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &length) == 0 &&
        ::getnameinfo(reinterpret_cast<sockaddr*>(&self), length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0) {
      local = host;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return local;
}

bool has_non_loopback_address() {
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return true;  // cannot tell: assume exposed
  bool found = false;
  for (ifaddrs* entry = interfaces; entry != nullptr && !found; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || (entry->ifa_flags & IFF_UP) == 0 || (entry->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    const int family = entry->ifa_addr->sa_family;
    found = family == AF_INET || family == AF_INET6;
  }
  ::freeifaddrs(interfaces);
  return found;
}

}  // namespace accel::detail
