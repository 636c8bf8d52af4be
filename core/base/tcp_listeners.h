#pragma once
// Which port a TCP listener holds on an address of this machine, from the system's own table.
// A run over several servers needs it for Gloo: Gloo binds a rank's listener on the address it
// is given and a port the system picks, and says which to no one but the rendezvous store
// (core/jobs/rendezvous_tunnel.h). The platform parts are tcp_listeners_posix.cpp (Linux's
// /proc/net/tcp) and tcp_listeners_windows.cpp (GetExtendedTcpTable).
#include <optional>
#include <string>
#include <vector>

namespace crucible {

// The ports of the listeners bound to exactly `ipv4` (dotted; a wildcard listener is not one),
// in ascending order; empty when there is none or the system cannot tell.
std::vector<int> listening_tcp_ports(const std::string& ipv4);
// The lowest of them; nullopt when there is none.
std::optional<int> listening_tcp_port(const std::string& ipv4);

}  // namespace crucible
