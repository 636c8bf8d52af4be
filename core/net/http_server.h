#pragma once
// The agent's HTTP(S) server, built to hold under hostile load: Boost.Beast on Asio. A few io
// threads own every socket (reads, writes, timers: a connection that waits costs memory, never a
// thread) and a small handler pool runs the routes. The request head is bounded in bytes and
// fields and must arrive before a deadline, bodies are capped however they are framed,
// connections are capped in all and per address, and a streamed answer (SSE, download) is
// produced a slice at a time on the pool and written asynchronously, so it holds no thread.
// Every request passes the AuthGate (auth_gate.h) before its route. Routes keep cpp-httplib's
// handler types (httplib::Request/Response/DataSink/ContentReader), so route code does not know
// the transport; serve_route() registers the same handlers on an httplib::Server (the tests'
// fake agents). The transport lives in http_listener.* and http_connection.*.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/net/api_routes.h"
#include "core/net/auth_gate.h"
#include "core/net/loopback.h"
#include "core/net/token_store.h"

namespace crucible::net {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    int port = 0;                     // 0 = pick a free port (tests)
    std::filesystem::path cert_file;  // both set = TLS (1.2 or 1.3, AEAD suites only)
    std::filesystem::path key_file;
    // Handler pool: routes and the slices of streamed answers run here. Idle connections and
    // SSE streams hold no thread, so a few suffice; uploads hold one while their body arrives.
    std::size_t threads = 16;
    std::size_t io_threads = 2;              // socket I/O, TLS handshakes, timers
    std::chrono::seconds read_timeout{30};   // longest gap inside a request body
    std::chrono::seconds write_timeout{30};  // longest a write may wait for the client
    std::size_t payload_limit = 64u << 20;   // request bodies (blob chunks are streamed under it)
    // The request head: request line and fields together, the field count (trailers of a
    // chunked body included) and the target (path and query). Over them: 431, 431, 414.
    std::size_t max_header_bytes = 16u << 10;
    std::size_t max_header_count = 100;
    std::size_t max_target_bytes = 8u << 10;
    // A request head must be complete this long after the connection opened (TLS handshake
    // included) or after its first byte came; a slow sender (slowloris) is closed then.
    std::chrono::seconds head_timeout{10};
    // A kept-alive connection may wait this long for its next request.
    std::chrono::seconds idle_timeout{30};
    // Connections in all (also held under the open-file limit) and per client address; over
    // them a new connection is closed at once.
    std::size_t max_connections = 4096;
    std::size_t max_connections_per_address = 256;
    // A streamed answer's provider that wrote nothing is called again after stream_poll; one
    // that wrote a little (under stream_batch_bytes) after stream_gather, so that a job writing
    // many events a second sends them in batches instead of one write per event.
    std::chrono::milliseconds stream_poll{50};
    std::chrono::milliseconds stream_gather{20};
    std::size_t stream_batch_bytes = 16u << 10;
    std::size_t download_slice = 256u << 10;  // bytes per provider call of a sized answer
    AuthGateOptions auth;
    bool allow_plain_http_off_loopback = false;  // only with the explicit --insecure
};

// Registers `handler` on `server` for `route` (api_routes.h) under the route's method; the
// tests' fake agents register through it.
void serve_route(httplib::Server& server, const Route& route, httplib::Server::Handler handler);

// Writes a JSON body with the status; errors are {"error": {"code": ..., "message": ...}}.
void send_json(httplib::Response& res, int status, const Json& body);
void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message);

namespace detail {
class HttpListener;
struct Exchange;
}  // namespace detail

class HttpServer {
  public:
    // `audit` (optional) receives (who, method, "path -> status") for every request a token
    // made, once its answer is known, and (who, action, detail) for refused logins.
    using AuditFn = std::function<void(const std::string& who, const std::string& action,
                                       const std::string& detail)>;

    HttpServer(HttpServerOptions options, std::shared_ptr<TokenStore> tokens, AuditFn audit = {});
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Serves `route` (api_routes.h, where every route is defined) under its method. Register
    // every route before start().
    void on(const Route& route, httplib::Server::Handler handler);
    // The same for a PUT or POST whose body is streamed to the handler (uploads): it runs once
    // the request is authenticated, and the reader hands it the body as it arrives (false when
    // the body is over the payload limit, cut off or late).
    void on(const Route& route, httplib::Server::HandlerWithContentReader handler);
    bool tls() const { return tls_; }

    // Binds and starts serving on background threads; returns the bound port.
    int start();
    void stop();
    int port() const { return port_; }
    // Connections open now (for tests and diagnostics).
    std::size_t connections() const;

    // Name of the token that authenticated the request, for the route handling it.
    static std::string caller(const httplib::Request& req);
    // Its name and role.
    static const Caller& identity(const httplib::Request& req);
    // When the last request with a valid token came (unix seconds; 0 = none yet).
    double last_authorized_request() const { return last_authorized_.load(); }

  private:
    struct RouteEntry;
    class App;

    bool authorize(const httplib::Request& req, httplib::Response& res);
    const RouteEntry* find_route(detail::Exchange& exchange) const;

    HttpServerOptions options_;
    AuditFn audit_;
    AuthGate gate_;
    std::atomic<double> last_authorized_{0};
    std::vector<std::unique_ptr<RouteEntry>> routes_;
    std::unique_ptr<App> app_;
    std::unique_ptr<detail::HttpListener> listener_;
    bool tls_ = false;
    int port_ = 0;
};

}  // namespace crucible::net
