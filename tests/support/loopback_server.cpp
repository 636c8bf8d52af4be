#include "tests/support/loopback_server.h"

#include <stdexcept>

namespace crucible::test_support {

LoopbackServer::~LoopbackServer() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
}

void LoopbackServer::on(const net::Route& route, httplib::Server::Handler handler) {
    net::serve_route(server_, route, std::move(handler));
}

int LoopbackServer::listen() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("no free loopback port for the test server");
    // The socket listens from bind on: a client that connects before the thread accepts waits
    // in the backlog.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    return port_;
}

}  // namespace crucible::test_support
