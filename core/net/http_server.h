#pragma once
// The agent's HTTP(S) server: cpp-httplib configured for a long-running service. Handlers run on
// a sized thread pool (an SSE stream holds a thread for its life), with read/write timeouts and
// a payload limit. Every route but /v1/health needs `Authorization: Bearer <token>`; repeated
// failures from one address are slowed down; clients must send a compatible protocol version.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/json.h"
#include "core/net/api_routes.h"
#include "core/net/token_store.h"

namespace crucible::net {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    int port = 0;                     // 0 = pick a free port (tests)
    std::filesystem::path cert_file;  // both set = TLS
    std::filesystem::path key_file;
    std::size_t threads = 96;  // SSE clients each hold one
    std::chrono::seconds read_timeout{30};
    std::chrono::seconds write_timeout{30};
    std::size_t payload_limit = 64u << 20;  // request bodies (blob chunks are streamed under it)
    // Distinct wrong tokens per address within auth_failure_window: a guesser is slowed down
    // after this many guesses, while a client that repeats one stale token (a studio polling
    // with an old one) never locks out the other users of its address.
    int max_auth_failures = 5;
    std::chrono::seconds auth_failure_window{300};
    bool allow_plain_http_off_loopback = false;  // only with the explicit --insecure
};

// Registers `handler` on `server` for `route` (api_routes.h) under the route's method; the agent's
// server and the tests' fake agents both register through it.
void serve_route(httplib::Server& server, const Route& route, httplib::Server::Handler handler);

// True for 127.0.0.0/8, ::1 and "localhost": the only addresses where plain HTTP is allowed.
bool is_loopback_host(const std::string& host);

// Writes a JSON body with the status; errors are {"error": {"code": ..., "message": ...}}.
void send_json(httplib::Response& res, int status, const Json& body);
void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message);

class HttpServer {
  public:
    // `audit` (optional) receives (who, action, detail) for every authenticated request that
    // changes something or downloads data.
    using AuditFn = std::function<void(const std::string& who, const std::string& action,
                                       const std::string& detail)>;

    HttpServer(HttpServerOptions options, std::shared_ptr<TokenStore> tokens, AuditFn audit = {});
    ~HttpServer();

    // Serves `route` (api_routes.h, where every route is defined) under its method.
    void on(const Route& route, httplib::Server::Handler handler);
    // The same for a PUT or POST whose body is streamed to the handler (uploads).
    void on(const Route& route, httplib::Server::HandlerWithContentReader handler);
    bool tls() const { return tls_; }

    // Binds and starts serving on a background thread; returns the bound port.
    int start();
    void stop();
    int port() const { return port_; }

    // Name of the token that authenticated the request (set by the auth pre-routing handler).
    static std::string caller(const httplib::Request& req);
    // When the last request with a valid token came (unix seconds; 0 = none yet).
    double last_authorized_request() const { return last_authorized_.load(); }

  private:
    bool authorize(const httplib::Request& req, httplib::Response& res);

    HttpServerOptions options_;
    std::shared_ptr<TokenStore> tokens_;
    AuditFn audit_;
    std::atomic<double> last_authorized_{0};
    std::unique_ptr<httplib::Server> server_;
    bool tls_ = false;
    int port_ = 0;
    std::thread thread_;
    std::mutex failures_mutex_;
    struct AuthFailures {
        std::vector<std::string> wrong_tokens;  // SHA-256 of each distinct wrong token
        std::chrono::steady_clock::time_point first;
    };
    std::map<std::string, AuthFailures> failures_;  // by remote address
};

}  // namespace crucible::net
