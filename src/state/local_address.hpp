// Which of this machine's addresses the others reach it by.
#pragma once

#include <string>

namespace accel::detail {

// The local address this machine uses to reach `remote` (a host name or an
// address): connecting a UDP socket sends nothing but makes the kernel choose
// the route and source. The hostname, Gloo's default, often resolves to 127.0.1.1
// (Debian's /etc/hosts), which the other machines cannot reach. Used for Gloo's
// listening address and for the address an elastic agent publishes for its
// ranks. Empty when it cannot be worked out (`remote` does not resolve).
std::string local_address_towards(const std::string& remote);

// Whether an interface that is up holds an address other hosts could use: not
// loopback. False in a network namespace with only `lo`, where a socket bound
// to every interface is still private to the machine.
bool has_non_loopback_address();

}  // namespace accel::detail
