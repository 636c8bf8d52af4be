#pragma once
// A fake agent for tests: a cpp-httplib server on 127.0.0.1 at a free port, served by its own
// thread from listen() until the object dies (stopped and joined there, also after a failed
// assertion). Routes are added to server() before listen(); they should use the route table
// (core/net/api_routes.h) so a fake cannot drift from the real agent.
#include <httplib.h>

#include <string>
#include <thread>

#include "core/net/http_server.h"

namespace crucible::test_support {

class LoopbackServer {
  public:
    LoopbackServer() = default;
    ~LoopbackServer();
    LoopbackServer(const LoopbackServer&) = delete;
    LoopbackServer& operator=(const LoopbackServer&) = delete;

    httplib::Server& server() { return server_; }
    // Serves `handler` for a route of the table (its pattern, under its method).
    void on(const net::Route& route, httplib::Server::Handler handler);
    // Binds a free loopback port and starts serving; returns the port.
    int listen();
    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  private:
    httplib::Server server_;
    std::thread thread_;
    int port_ = 0;
};

}  // namespace crucible::test_support
