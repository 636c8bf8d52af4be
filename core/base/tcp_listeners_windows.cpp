// Windows half of tcp_listeners.h (compiled on Windows and by the mingw-w64 check in CI).
#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
// After winsock2.h: the IP helper's tables.
#include <iphlpapi.h>

#include <algorithm>
#include <vector>

#include "core/base/tcp_listeners.h"

namespace crucible {

std::vector<int> listening_tcp_ports(const std::string& ipv4) {
    std::vector<int> ports;
    IN_ADDR wanted{};
    if (InetPtonA(AF_INET, ipv4.c_str(), &wanted) != 1) return ports;
    ULONG size = 0;
    std::vector<unsigned char> buffer;
    DWORD rc = ERROR_INSUFFICIENT_BUFFER;
    // The table may grow between the two calls: ask again with the size it says.
    for (int attempt = 0; attempt < 4 && rc == ERROR_INSUFFICIENT_BUFFER; ++attempt) {
        buffer.resize(size);
        rc = GetExtendedTcpTable(buffer.empty() ? nullptr : buffer.data(), &size, FALSE, AF_INET,
                                 TCP_TABLE_BASIC_LISTENER, 0);
    }
    if (rc != NO_ERROR) return ports;
    const auto* table = reinterpret_cast<const MIB_TCPTABLE*>(buffer.data());
    for (DWORD i = 0; i < table->dwNumEntries; ++i) {
        const MIB_TCPROW& row = table->table[i];
        if (row.dwLocalAddr == wanted.S_un.S_addr)
            ports.push_back(ntohs(static_cast<u_short>(row.dwLocalPort)));
    }
    std::sort(ports.begin(), ports.end());
    return ports;
}

}  // namespace crucible
#endif
