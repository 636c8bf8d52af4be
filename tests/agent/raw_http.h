// POSIX-only test: raw BSD sockets write malformed and partial HTTP byte by byte (Winsock twin:
// open work).
#pragma once
// Raw HTTP/1.1 over plain sockets, for the tests and benchmarks that play a hostile or a very
// numerous client (tests/agent/agent_hostile_test.cpp, tests/agent_cli/bench_agent_load.cpp):
// half-sent heads, huge fields, bodies that never end, a thousand idle connections, connections
// from other loopback addresses (Linux accepts any 127.x.y.z source). POSIX only.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>

namespace crucible::test {

// One client connection; closed when it dies.
class RawSocket {
  public:
    // Connects to 127.0.0.1:`port` from `source` (a loopback address, any port).
    explicit RawSocket(int port, const char* source = "127.0.0.1") {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) return;
        sockaddr_in from{};
        from.sin_family = AF_INET;
        ::inet_pton(AF_INET, source, &from.sin_addr);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(static_cast<std::uint16_t>(port));
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
            ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~RawSocket() {
        if (fd_ >= 0) ::close(fd_);
    }
    RawSocket(const RawSocket&) = delete;
    RawSocket& operator=(const RawSocket&) = delete;

    bool connected() const { return fd_ >= 0; }
    int fd() const { return fd_; }

    // Sends all of `data`; false once the peer has closed or reset the connection.
    bool send(std::string_view data) {
        while (!data.empty()) {
            const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    // Reads until the peer closes, `enough(text so far)` holds or `timeout` passes.
    std::string read(std::chrono::milliseconds timeout,
                     const std::function<bool(const std::string&)>& enough = {}) {
        std::string out;
        const auto end = std::chrono::steady_clock::now() + timeout;
        char buf[65536];
        for (;;) {
            if (enough && enough(out)) break;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                end - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) {
                peer_closed_ = true;
                break;
            }
            out.append(buf, static_cast<std::size_t>(n));
        }
        return out;
    }

    // Reads up to the end of a response head ("\r\n\r\n").
    std::string read_head(std::chrono::milliseconds timeout) {
        return read(timeout, [](const std::string& s) { return s.find("\r\n\r\n") != s.npos; });
    }

    // True when the peer has closed or reset the connection by now (without waiting; what it
    // sent before is left unread).
    bool closed_now() {
        if (peer_closed_) return true;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) return false;
        char c;
        const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        peer_closed_ = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        return peer_closed_;
    }

    // True when the last read ended at the peer's close (EOF or reset).
    bool peer_closed() const { return peer_closed_; }

    // Waits up to `timeout` for the peer to close; drops what it sends meanwhile.
    bool wait_closed(std::chrono::milliseconds timeout) {
        read(timeout);
        return peer_closed_;
    }

  private:
    int fd_ = -1;
    bool peer_closed_ = false;
};

// The status code of a response ("HTTP/1.1 431 ..." -> 431); 0 when there is none.
inline int status_of(const std::string& response) {
    if (response.size() < 12 || response.rfind("HTTP/1.", 0) != 0) return 0;
    return std::atoi(response.substr(9, 3).c_str());
}

// The body after the head of a complete response read whole.
inline std::string body_of(const std::string& response) {
    const auto end = response.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : response.substr(end + 4);
}

// Resident memory of a process in kB (/proc/<pid>/status VmRSS); 0 when unknown.
inline long rss_kb(long pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return 0;
}

}  // namespace crucible::test
