#include "core/base/tcp_listeners.h"

namespace crucible {

std::optional<int> listening_tcp_port(const std::string& ipv4) {
    const std::vector<int> ports = listening_tcp_ports(ipv4);
    if (ports.empty()) return std::nullopt;
    return ports.front();
}

}  // namespace crucible
