// Windows half of tcp_listeners.h (compiled on Windows and by the mingw-w64 check in CI).
#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
// After winsock2.h: the IP helper's tables.
#include <iphlpapi.h>

#include "core/base/tcp_listeners.h"

namespace crucible {

std::vector<TcpListener> tcp_listeners() {
    std::vector<TcpListener> listeners;
    ULONG size = 0;
    std::vector<unsigned char> buffer;
    DWORD rc = ERROR_INSUFFICIENT_BUFFER;
    // The table may grow between the two calls: ask again with the size it says.
    for (int attempt = 0; attempt < 4 && rc == ERROR_INSUFFICIENT_BUFFER; ++attempt) {
        buffer.resize(size);
        rc = GetExtendedTcpTable(buffer.empty() ? nullptr : buffer.data(), &size, FALSE, AF_INET,
                                 TCP_TABLE_BASIC_LISTENER, 0);
    }
    if (rc != NO_ERROR) return listeners;
    const auto* table = reinterpret_cast<const MIB_TCPTABLE*>(buffer.data());
    for (DWORD i = 0; i < table->dwNumEntries; ++i) {
        IN_ADDR address{};
        address.S_un.S_addr = table->table[i].dwLocalAddr;
        char dotted[INET_ADDRSTRLEN] = {};
        if (!InetNtopA(AF_INET, &address, dotted, sizeof dotted)) continue;
        listeners.push_back({dotted, ntohs(static_cast<u_short>(table->table[i].dwLocalPort))});
    }
    return listeners;
}

}  // namespace crucible
#endif
