// POSIX half of tcp_listeners.h: Linux's /proc/net/tcp. The Windows twin is
// tcp_listeners_windows.cpp.
#ifndef _WIN32
#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/base/tcp_listeners.h"

namespace crucible {

std::vector<int> listening_tcp_ports(const std::string& ipv4) {
    std::vector<int> ports;
    in_addr wanted{};
    if (inet_pton(AF_INET, ipv4.c_str(), &wanted) != 1) return ports;
    // Lines: "sl local_address rem_address st ...", the address as the 32-bit word in the
    // machine's byte order and the port, both in hex; st 0A is LISTEN.
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the heading
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        if (!(fields >> slot >> local >> remote >> state) || state != "0A") continue;
        const auto colon = local.find(':');
        if (colon != 8) continue;
        const unsigned long address = std::stoul(local.substr(0, 8), nullptr, 16);
        const int port = static_cast<int>(std::stoul(local.substr(colon + 1), nullptr, 16));
        if (static_cast<std::uint32_t>(address) == wanted.s_addr) ports.push_back(port);
    }
    std::sort(ports.begin(), ports.end());
    return ports;
}

}  // namespace crucible
#endif
