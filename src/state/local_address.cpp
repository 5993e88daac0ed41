#include "state/local_address.hpp"

#include <netdb.h>
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

}  // namespace accel::detail
