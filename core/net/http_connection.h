#pragma once
// Internal to the agent's server (http_server.h): one client connection, from the accepted
// socket to its close, and what it shares with the listener (http_listener.h). A connection
// lives on the io threads (a strand of its own): it reads the request head under the head
// deadline with the limits of http_request_parser.h, hands the request to the handler pool
// (HttpApp: authentication, routing, the route's handler), reads a body only for an admitted
// route, and writes the answer asynchronously; a streamed answer's provider is called on the
// pool a slice at a time between writes, or again after a timer when it had nothing to say.
// No thread ever waits on a socket here, except an upload's handler while its body arrives.
#include <httplib.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/net/auth_gate.h"
#include "core/net/http_request_parser.h"
#include "core/net/http_server.h"

namespace crucible::net::detail {

// One request and its answer as they travel between the connection and the handler pool.
struct Exchange {
    httplib::Request req;
    httplib::Response res;
    Caller caller;                // set by HttpApp::admit for the route's handler
    const void* route = nullptr;  // HttpApp's choice, opaque to the connection
    bool body_too_large = false;  // the body went over the payload limit
};

enum class Admission {
    Respond,             // the answer is in the exchange already (refused, unknown route)
    ReadBodyThenHandle,  // read the whole body into req.body, then handle()
    HandleWithReader,    // handle() now; the route reads the body through a ContentReader
};

// What a connection asks of the server; every call runs on the handler pool.
class HttpApp {
  public:
    virtual ~HttpApp() = default;
    // Authenticates the request and finds its route (no body has been read yet).
    virtual Admission admit(Exchange& exchange) = 0;
    // Runs the route; `reader` is set for HandleWithReader. Exceptions become JSON errors.
    virtual void handle(Exchange& exchange, const httplib::ContentReader* reader) = 0;
    // Last touches before the answer is written (default status, bodies of bare errors).
    virtual void finish(Exchange& exchange) = 0;
};

// What the listener and its connections share; it lives as long as the last connection.
struct ServerShared {
    HttpServerOptions options;
    RequestLimits limits;
    HttpApp* app = nullptr;
    boost::asio::thread_pool* pool = nullptr;
    boost::asio::ssl::context* tls = nullptr;  // null: plain HTTP
    std::size_t max_connections = 0;           // options' cap, held under the open-file limit
    std::atomic<bool> stopping{false};

    // Counts a new connection from `address`; false when a cap is reached (then it is closed).
    bool admit_connection(const std::string& address);
    void release_connection(const std::string& address);
    std::size_t open_connections() const;

  private:
    mutable std::mutex mutex_;
    std::size_t open_ = 0;
    std::unordered_map<std::string, std::size_t> per_address_;
};

struct Peer {
    std::string address;  // IPv4-mapped IPv6 addresses as plain IPv4
    int port = 0;
    std::string local_address;
    int local_port = 0;
};

// Serves HTTP (or HTTPS when shared->tls is set) on an accepted, counted socket until it
// closes; the count is released then.
void serve_connection(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerShared> shared,
                      Peer peer);

}  // namespace crucible::net::detail
