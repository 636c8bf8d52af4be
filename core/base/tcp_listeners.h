#pragma once
// Which ports TCP listeners hold on the addresses of this machine, from the system's own table.
// A run over several servers needs it for Gloo: Gloo binds a rank's listener on the address it
// is given and a port the system picks, and says which to no one but the rendezvous store
// (core/jobs/rendezvous_tunnel.h). The platform parts are tcp_listeners_posix.cpp (Linux's
// /proc/net/tcp) and tcp_listeners_windows.cpp (GetExtendedTcpTable).
#include <optional>
#include <string>
#include <vector>

namespace crucible {

// One IPv4 listener: its address (dotted, "0.0.0.0" for a wildcard listener) and port.
struct TcpListener {
    std::string address;
    int port = 0;
};

// Every IPv4 listener of this machine (of this network namespace), one read of the system's
// table; empty when the system cannot tell.
std::vector<TcpListener> tcp_listeners();

// The ports of the listeners in `listeners` bound to exactly `ipv4` (dotted, as tcp_listeners
// writes it; a wildcard listener is not one), in ascending order.
std::vector<int> listening_tcp_ports(const std::vector<TcpListener>& listeners,
                                     const std::string& ipv4);
// The same from a fresh read of the table.
std::vector<int> listening_tcp_ports(const std::string& ipv4);
// The lowest of them; nullopt when there is none.
std::optional<int> listening_tcp_port(const std::vector<TcpListener>& listeners,
                                      const std::string& ipv4);
std::optional<int> listening_tcp_port(const std::string& ipv4);

}  // namespace crucible
