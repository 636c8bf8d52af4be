#include "core/net/http_server.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/net/api_version.h"

namespace crucible::net {

bool is_loopback_host(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

void send_json(httplib::Response& res, int status, const Json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message) {
    send_json(res, status, {{"error", {{"code", code}, {"message", message}}}});
}

HttpServer::HttpServer(HttpServerOptions options, std::shared_ptr<TokenStore> tokens, AuditFn audit)
    : options_(std::move(options)), tokens_(std::move(tokens)), audit_(std::move(audit)) {
    tls_ = !options_.cert_file.empty() && !options_.key_file.empty();
    if (tls_) {
        server_ = std::make_unique<httplib::SSLServer>(options_.cert_file.string().c_str(),
                                                       options_.key_file.string().c_str());
        if (!server_->is_valid())
            throw Error("TLS: cannot load certificate " + path_to_utf8(options_.cert_file) +
                        " and key " + path_to_utf8(options_.key_file));
    } else {
        if (!is_loopback_host(options_.host) && !options_.allow_plain_http_off_loopback)
            throw Error("refusing plain HTTP on " + options_.host +
                        ": TLS is required on non-loopback addresses");
        server_ = std::make_unique<httplib::Server>();
    }
    const std::size_t threads = options_.threads;
    server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_->set_read_timeout(options_.read_timeout.count(), 0);
    server_->set_write_timeout(options_.write_timeout.count(), 0);
    server_->set_payload_max_length(options_.payload_limit);
    server_->set_keep_alive_max_count(1000);
    server_->set_tcp_nodelay(true);  // answers go out at once, not after a delayed ACK
    // Socket buffer sizes are left to the kernel's autotuning: a fixed SO_RCVBUF turns it off
    // and is capped by net.core.rmem_max (often 208 KB), which slows uploads down.
    server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        return authorize(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                   : httplib::Server::HandlerResponse::Handled;
    });
    server_->set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            try {
                std::rethrow_exception(ep);
            } catch (const InputError& e) {
                send_error(res, 400, "bad_request", e.what());
            } catch (const std::exception& e) {
                send_error(res, 500, "internal", e.what());
            } catch (...) {
                send_error(res, 500, "internal", "unknown failure");
            }
        });
    server_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 404)
            send_error(res, 404, "not_found", "no route " + req.method + " " + req.path);
        else if (res.status == 413)
            send_error(res, 413, "too_large", "request body over the agent's limit");
        else if (res.status >= 400)
            send_error(res, res.status, "http_error", "request failed");
    });
}

HttpServer::~HttpServer() {
    stop();
}

// httplib runs the pre-routing handler and the route handler on the same pool thread, so the
// authenticated caller is handed over in a thread-local.
static thread_local std::string t_caller;

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

void HttpServer::on(const Route& route, httplib::Server::Handler handler) {
    serve_route(*server_, route, std::move(handler));
}

void HttpServer::on(const Route& route, httplib::Server::HandlerWithContentReader handler) {
    const std::string pattern(route.pattern);
    if (route.method == HttpMethod::Put)
        server_->Put(pattern, std::move(handler));
    else if (route.method == HttpMethod::Post)
        server_->Post(pattern, std::move(handler));
    else
        throw Error(route.describe() + ": only PUT and POST take a streamed body");
}

std::string HttpServer::caller(const httplib::Request&) {
    return t_caller;
}

bool HttpServer::authorize(const httplib::Request& req, httplib::Response& res) {
    t_caller.clear();
    if (req.has_header(kVersionHeader)) {
        int theirs = std::atoi(req.get_header_value(kVersionHeader).c_str());
        std::string mismatch = protocol_mismatch(kProtocolVersion, theirs, true);
        if (!mismatch.empty()) {
            send_error(res, 426, "incompatible_version", mismatch);
            return false;
        }
    }
    res.set_header(kVersionHeader, std::to_string(kProtocolVersion));
    if (req.path == routes::kHealth.pattern) return true;

    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(failures_mutex_);
        auto it = failures_.find(req.remote_addr);
        if (it != failures_.end()) {
            if (now - it->second.first > options_.auth_failure_window)
                failures_.erase(it);
            else if (static_cast<int>(it->second.wrong_tokens.size()) >=
                     options_.max_auth_failures) {
                auto wait = std::chrono::duration_cast<std::chrono::seconds>(
                    options_.auth_failure_window - (now - it->second.first));
                res.set_header("Retry-After", std::to_string(wait.count()));
                send_error(res, 429, "too_many_failures",
                           "too many failed logins from this address; retry in " +
                               std::to_string(wait.count()) + " s");
                return false;
            }
        }
    }
    std::string header = req.get_header_value("Authorization");
    std::optional<std::string> who;
    if (header.rfind("Bearer ", 0) == 0) who = tokens_->verify(header.substr(7));
    if (!who) {
        // Only distinct wrong tokens count towards the slow-down: a missing header is a client
        // that is not set up yet, and the same wrong token again is a stale one, not a guess.
        if (!header.empty()) {
            const std::string hash = sha256_hex(header);
            std::lock_guard lock(failures_mutex_);
            auto& f = failures_[req.remote_addr];
            if (f.wrong_tokens.empty()) f.first = now;
            if (std::find(f.wrong_tokens.begin(), f.wrong_tokens.end(), hash) ==
                f.wrong_tokens.end())
                f.wrong_tokens.push_back(hash);
        }
        if (audit_) audit_("-", "auth_failed", req.remote_addr + " " + req.method + " " + req.path);
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, 401, "unauthorized",
                   header.empty() ? "missing 'Authorization: Bearer <token>' (create one with: "
                                    "crucible agent token create)"
                                  : "invalid token");
        return false;
    }
    t_caller = *who;
    last_authorized_ = unix_time_now();
    if (audit_ && req.method != "GET" && req.method != "HEAD") audit_(*who, req.method, req.path);
    return true;
}

int HttpServer::start() {
    if (options_.port == 0) {
        port_ = server_->bind_to_any_port(options_.host.c_str());
    } else {
        port_ = server_->bind_to_port(options_.host.c_str(), options_.port) ? options_.port : -1;
    }
    if (port_ <= 0)
        throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                    " (address in use or not available)");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    return port_;
}

void HttpServer::stop() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
}

}  // namespace crucible::net
