#pragma once
// An agent that stalls, for tests of what a client does when the network goes quiet: a TCP server
// on 127.0.0.1 that reads each request's headers, answers with the headers of an event stream
// (chunked, text/event-stream) and then sends nothing. It serves one connection at a time, and
// stops by itself after `lifetime` so a failing test never hangs (POSIX).
#include <atomic>
#include <chrono>
#include <thread>

namespace crucible::test_support {

class StalledServer {
  public:
    explicit StalledServer(std::chrono::milliseconds lifetime = std::chrono::seconds(30));
    ~StalledServer();
    StalledServer(const StalledServer&) = delete;
    StalledServer& operator=(const StalledServer&) = delete;

    int port() const { return port_; }
    // Requests whose headers were answered so far.
    int answered() const { return answered_.load(); }
    // Connections the client closed (the server never closes one before it stops).
    int closed_by_client() const { return closed_by_client_.load(); }

  private:
    void serve(std::chrono::steady_clock::time_point deadline);

    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> answered_{0};
    std::atomic<int> closed_by_client_{0};
    std::thread thread_;
};

}  // namespace crucible::test_support
