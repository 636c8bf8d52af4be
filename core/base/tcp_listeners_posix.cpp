// POSIX half of tcp_listeners.h: Linux's /proc/net/tcp. The Windows twin is
// tcp_listeners_windows.cpp.
#ifndef _WIN32
#include <arpa/inet.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/base/tcp_listeners.h"

namespace crucible {

std::vector<TcpListener> tcp_listeners() {
    std::vector<TcpListener> listeners;
    // Lines: "sl local_address rem_address st ...", the address as the 32-bit word in the
    // machine's byte order and the port, both in hex; st 0A is LISTEN.
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the heading
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        if (!(fields >> slot >> local >> remote >> state) || state != "0A") continue;
        if (local.size() < 10 || local[8] != ':') continue;
        in_addr address{};
        address.s_addr = static_cast<std::uint32_t>(std::stoul(local.substr(0, 8), nullptr, 16));
        char dotted[INET_ADDRSTRLEN] = {};
        if (!inet_ntop(AF_INET, &address, dotted, sizeof dotted)) continue;
        listeners.push_back({dotted, static_cast<int>(std::stoul(local.substr(9), nullptr, 16))});
    }
    return listeners;
}

}  // namespace crucible
#endif
