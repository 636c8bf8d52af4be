// POSIX-only test: raw BSD sockets accept and then stall (Winsock twin: open work).
#include "tests/support/stalled_server.h"

#ifndef _WIN32
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace crucible::test_support {

namespace {

constexpr int kTickMs = 20;  // how often the server looks at its stop flag

// Waits up to one tick for `fd` to be readable; false on timeout.
bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, kTickMs) > 0;
}

}  // namespace

StalledServer::StalledServer(std::chrono::milliseconds lifetime) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listener_ < 0) throw std::runtime_error("StalledServer: no socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 8) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(listener_);
        throw std::runtime_error("StalledServer: cannot listen on 127.0.0.1");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread(
        [this, deadline = std::chrono::steady_clock::now() + lifetime] { serve(deadline); });
}

StalledServer::~StalledServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();  // at most one tick
    ::close(listener_);
}

void StalledServer::serve(std::chrono::steady_clock::time_point deadline) {
    auto running = [&] { return !stop_ && std::chrono::steady_clock::now() < deadline; };
    while (running()) {
        if (!readable(listener_)) continue;
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) continue;
        std::string request;
        bool open = true;
        // Reads the request's headers, answers with a stream's headers, then says nothing.
        while (open && running() && request.find("\r\n\r\n") == std::string::npos) {
            if (!readable(fd)) continue;
            char buffer[4096];
            const auto n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0)
                open = false;
            else
                request.append(buffer, static_cast<std::size_t>(n));
        }
        if (open && running()) {
            const std::string answer =
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n";
            open = ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) ==
                   static_cast<ssize_t>(answer.size());
            if (open) ++answered_;
        }
        // Silence until the client goes away or the server stops.
        while (open && running()) {
            if (!readable(fd)) continue;
            char buffer[256];
            if (::recv(fd, buffer, sizeof buffer, 0) <= 0) open = false;
        }
        if (!open) ++closed_by_client_;
        ::close(fd);
    }
}

}  // namespace crucible::test_support
#endif
