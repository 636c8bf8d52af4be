#include "core/base/tcp_listeners.h"

#include <algorithm>

namespace crucible {

std::vector<int> listening_tcp_ports(const std::vector<TcpListener>& listeners,
                                     const std::string& ipv4) {
    std::vector<int> ports;
    for (const TcpListener& l : listeners)
        if (l.address == ipv4) ports.push_back(l.port);
    std::sort(ports.begin(), ports.end());
    return ports;
}

std::vector<int> listening_tcp_ports(const std::string& ipv4) {
    return listening_tcp_ports(tcp_listeners(), ipv4);
}

std::optional<int> listening_tcp_port(const std::vector<TcpListener>& listeners,
                                      const std::string& ipv4) {
    const std::vector<int> ports = listening_tcp_ports(listeners, ipv4);
    if (ports.empty()) return std::nullopt;
    return ports.front();
}

std::optional<int> listening_tcp_port(const std::string& ipv4) {
    return listening_tcp_port(tcp_listeners(), ipv4);
}

}  // namespace crucible
