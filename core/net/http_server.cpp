#include "core/net/http_server.h"

#include <regex>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/net/http_connection.h"
#include "core/net/http_listener.h"

namespace crucible::net {

void send_json(httplib::Response& res, int status, const Json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message) {
    send_json(res, status, {{"error", {{"code", code}, {"message", message}}}});
}

void serve_route(httplib::Server& server, const Route& route, httplib::Server::Handler handler) {
    const std::string pattern(route.pattern);
    switch (route.method) {
        case HttpMethod::Get:
            server.Get(pattern, std::move(handler));
            return;
        case HttpMethod::Post:
            server.Post(pattern, std::move(handler));
            return;
        case HttpMethod::Put:
            server.Put(pattern, std::move(handler));
            return;
        case HttpMethod::Delete:
            server.Delete(pattern, std::move(handler));
            return;
    }
}

namespace {

// The authenticated caller, handed to the route's handler on its pool thread (admit() stores
// it in the exchange, handle() puts it here before the handler runs).
thread_local Caller t_caller;

// Replaces whatever the answer held with a JSON error (a handler may have set a body, a
// content type or a provider before it failed).
void replace_with_error(httplib::Response& res, int status, const std::string& code,
                        const std::string& message) {
    res.content_provider_ = nullptr;
    res.content_length_ = 0;
    res.is_chunked_content_provider_ = false;
    res.body.clear();
    res.headers.erase("Content-Type");
    send_error(res, status, code, message);
}

void answer_exception(httplib::Response& res, const std::exception_ptr& failure) {
    try {
        std::rethrow_exception(failure);
    } catch (const InputError& e) {
        replace_with_error(res, 400, "bad_request", e.what());
    } catch (const std::exception& e) {
        replace_with_error(res, 500, "internal", e.what());
    } catch (...) {
        replace_with_error(res, 500, "internal", "unknown failure");
    }
}

}  // namespace

struct HttpServer::RouteEntry {
    HttpMethod method;
    std::regex pattern;
    httplib::Server::Handler handler;
    httplib::Server::HandlerWithContentReader reader_handler;  // set: the body is streamed
};

// The server's side of every request, on the handler pool: authentication, routing, the
// route's handler and the JSON shape of errors.
class HttpServer::App : public detail::HttpApp {
  public:
    explicit App(HttpServer& server) : server_(server) {}

    detail::Admission admit(detail::Exchange& exchange) override {
        try {
            if (!server_.authorize(exchange.req, exchange.res)) return detail::Admission::Respond;
            exchange.caller = t_caller;
            const RouteEntry* route = server_.find_route(exchange);
            if (!route) {
                exchange.res.status = 404;
                return detail::Admission::Respond;
            }
            exchange.route = route;
            return route->reader_handler ? detail::Admission::HandleWithReader
                                         : detail::Admission::ReadBodyThenHandle;
        } catch (...) {
            answer_exception(exchange.res, std::current_exception());
            return detail::Admission::Respond;
        }
    }

    void handle(detail::Exchange& exchange, const httplib::ContentReader* reader) override {
        t_caller = exchange.caller;
        const auto* route = static_cast<const RouteEntry*>(exchange.route);
        try {
            if (reader)
                route->reader_handler(exchange.req, exchange.res, *reader);
            else
                route->handler(exchange.req, exchange.res);
        } catch (...) {
            answer_exception(exchange.res, std::current_exception());
        }
        t_caller = {};
    }

    void finish(detail::Exchange& exchange) override {
        auto& res = exchange.res;
        const auto& req = exchange.req;
        // A body over the limit is a 413 whatever its framing and whatever the route made of
        // the cut-off body; the route's other fields (Upload-Offset) stay.
        if (exchange.body_too_large && res.status != 413)
            replace_with_error(res, 413, "too_large",
                               "request body over the agent's limit of " +
                                   std::to_string(server_.options_.payload_limit >> 20) + " MB");
        if (res.status == -1) res.status = 200;
        // Every request a token made, read or write, with its answer (a streamed answer is
        // logged when it starts).
        if (server_.audit_ && !exchange.caller.name.empty())
            server_.audit_(exchange.caller.name, req.method,
                           req.path + " -> " + std::to_string(res.status));
        if (res.status < 400 || !res.body.empty() || res.content_provider_) return;
        if (res.status == 404)
            send_error(res, 404, "not_found", "no route " + req.method + " " + req.path);
        else if (res.status == 413)
            send_error(res, 413, "too_large", "request body over the agent's limit");
        else
            send_error(res, res.status, "http_error", "request failed");
    }

  private:
    HttpServer& server_;
};

HttpServer::HttpServer(HttpServerOptions options, std::shared_ptr<TokenStore> tokens, AuditFn audit)
    : options_(std::move(options)),
      audit_(audit),
      gate_(std::move(tokens), options_.auth, std::move(audit)),
      app_(std::make_unique<App>(*this)) {
    tls_ = !options_.cert_file.empty() && !options_.key_file.empty();
    if (!tls_ && !is_loopback_host(options_.host) && !options_.allow_plain_http_off_loopback)
        throw Error("refusing plain HTTP on " + options_.host +
                    ": TLS is required on non-loopback addresses");
    listener_ = std::make_unique<detail::HttpListener>(options_, *app_);
}

HttpServer::~HttpServer() {
    stop();
}

void HttpServer::on(const Route& route, httplib::Server::Handler handler) {
    auto entry = std::make_unique<RouteEntry>();
    entry->method = route.method;
    entry->pattern = std::regex(std::string(route.pattern));
    entry->handler = std::move(handler);
    routes_.push_back(std::move(entry));
}

void HttpServer::on(const Route& route, httplib::Server::HandlerWithContentReader handler) {
    if (route.method != HttpMethod::Put && route.method != HttpMethod::Post)
        throw Error(route.describe() + ": only PUT and POST take a streamed body");
    auto entry = std::make_unique<RouteEntry>();
    entry->method = route.method;
    entry->pattern = std::regex(std::string(route.pattern));
    entry->reader_handler = std::move(handler);
    routes_.push_back(std::move(entry));
}

const HttpServer::RouteEntry* HttpServer::find_route(detail::Exchange& exchange) const {
    auto& req = exchange.req;
    const std::string_view method = req.method == "HEAD" ? "GET" : std::string_view(req.method);
    for (const auto& route : routes_)
        if (method == method_name(route->method) &&
            std::regex_match(req.path, req.matches, route->pattern))
            return route.get();
    return nullptr;
}

std::string HttpServer::caller(const httplib::Request&) {
    return t_caller.name;
}

const Caller& HttpServer::identity(const httplib::Request&) {
    return t_caller;
}

bool HttpServer::authorize(const httplib::Request& req, httplib::Response& res) {
    t_caller = {};
    auto caller = gate_.admit(req, res);
    if (!caller) return false;
    t_caller = *caller;
    if (caller->name.empty()) return true;  // /v1/health
    last_authorized_ = unix_time_now();
    return true;
}

int HttpServer::start() {
    if (!listener_) throw Error("the HTTP server was stopped; make a new one");
    port_ = listener_->start();
    return port_;
}

void HttpServer::stop() {
    // Ends every connection and frees the port now, not when the server is destroyed.
    if (listener_) listener_->stop();
    listener_.reset();
}

std::size_t HttpServer::connections() const {
    return listener_ ? listener_->connections() : 0;
}

}  // namespace crucible::net
