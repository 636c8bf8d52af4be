#include "core/net/http_listener.h"

#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/net/open_files.h"

namespace crucible::net::detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

// TLS 1.2 with ECDHE and an AEAD cipher only (forward secrecy, no CBC), and TLS 1.3, whose
// suites are all AEAD.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr const char* kTls13Suites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

// Descriptors kept out of the connection cap for the agent's own files, pipes and workers.
constexpr std::uint64_t kReservedDescriptors = 64;

std::unique_ptr<asio::ssl::context> make_tls_context(const HttpServerOptions& options) {
    auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1 | asio::ssl::context::no_compression |
                         asio::ssl::context::single_dh_use);
    SSL_CTX* native = context->native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1 ||
        SSL_CTX_set_ciphersuites(native, kTls13Suites) != 1)
        throw Error("TLS: this OpenSSL offers none of the agent's cipher suites");
    error_code ec;
    context->use_certificate_chain_file(path_to_utf8(options.cert_file), ec);
    if (!ec)
        context->use_private_key_file(path_to_utf8(options.key_file), asio::ssl::context::pem, ec);
    if (ec || SSL_CTX_check_private_key(native) != 1)
        throw Error("TLS: cannot load certificate " + path_to_utf8(options.cert_file) +
                    " and key " + path_to_utf8(options.key_file));
    return context;
}

std::string address_text(asio::ip::address address) {
    if (address.is_v6() && address.to_v6().is_v4_mapped())
        address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
    return address.to_string();
}

}  // namespace

HttpListener::HttpListener(const HttpServerOptions& options, HttpApp& app)
    : pool_(std::max<std::size_t>(options.threads, 1)),
      accept_strand_(asio::make_strand(io_)),
      acceptor_(accept_strand_),
      retry_(accept_strand_),
      shared_(std::make_shared<ServerShared>()) {
    if (!options.cert_file.empty() && !options.key_file.empty()) tls_ = make_tls_context(options);
    shared_->options = options;
    shared_->limits.header_bytes = static_cast<std::uint32_t>(options.max_header_bytes);
    shared_->limits.header_count = options.max_header_count;
    shared_->limits.target_bytes = options.max_target_bytes;
    shared_->limits.body_bytes = options.payload_limit;
    shared_->app = &app;
    shared_->pool = &pool_;
    shared_->tls = tls_.get();
    shared_->max_connections = options.max_connections;
}

HttpListener::~HttpListener() {
    stop();
}

int HttpListener::start() {
    const auto& options = shared_->options;
    const auto fail = [&](const std::string& why) {
        return Error("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                     " (" + why + ")");
    };
    if (started_) throw fail("already started");
    error_code ec;
    tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve(options.host, std::to_string(options.port),
                                      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec) throw fail(ec.message());
    for (const auto& entry : endpoints) {
        acceptor_.open(entry.endpoint().protocol(), ec);
        if (ec) continue;
#ifndef _WIN32
        // Rebinding the port of an agent that just ended (its connections in TIME_WAIT). On
        // Windows SO_REUSEADDR would let another process take a bound port, so it stays off.
        acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
#endif
        acceptor_.bind(entry.endpoint(), ec);
        if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
        if (!ec) break;
        error_code ignored;
        acceptor_.close(ignored);
    }
    if (!acceptor_.is_open()) throw fail("address in use or not available");
    const int port = acceptor_.local_endpoint().port();
    if (const std::uint64_t files = open_file_limit(); files > 0) {
        const std::uint64_t room =
            files > 2 * kReservedDescriptors ? files - kReservedDescriptors : files / 2;
        if (room < shared_->max_connections) {
            spdlog::warn("open-file limit {}: at most {} connections (raise `ulimit -n`)", files,
                         room);
            shared_->max_connections = static_cast<std::size_t>(room);
        }
    }
    started_ = true;
    asio::post(accept_strand_, [this] { accept(); });
    const std::size_t threads = std::max<std::size_t>(options.io_threads, 1);
    for (std::size_t i = 0; i < threads; ++i)
        io_threads_.emplace_back([this] {
            for (;;) {
                try {
                    io_.run();
                    return;
                } catch (const std::exception& e) {
                    spdlog::error("HTTP server: {}", e.what());  // a bug; serving goes on
                }
            }
        });
    return port;
}

void HttpListener::accept() {
    acceptor_.async_accept(
        asio::make_strand(io_),
        [this](const error_code& ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void HttpListener::on_accept(const error_code& ec, tcp::socket socket) {
    if (shared_->stopping || !acceptor_.is_open()) return;
    if (ec) {
        // Out of descriptors (or another passing failure): accept again a little later instead
        // of spinning on the same error.
        retry_.expires_after(std::chrono::milliseconds(100));
        retry_.async_wait([this](const error_code& wait_ec) {
            if (!wait_ec && !shared_->stopping) accept();
        });
        return;
    }
    error_code remote_ec, local_ec;
    const auto remote = socket.remote_endpoint(remote_ec);
    const auto local = socket.local_endpoint(local_ec);
    if (!remote_ec && !local_ec) {
        Peer peer{address_text(remote.address()), remote.port(), address_text(local.address()),
                  local.port()};
        if (shared_->admit_connection(peer.address)) {
            error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);  // answers go out without delay
            serve_connection(std::move(socket), shared_, std::move(peer));
        }
        // Over a cap: the socket closes as it goes out of scope here.
    }
    accept();
}

void HttpListener::stop() {
    if (stopped_) return;
    stopped_ = true;
    shared_->stopping = true;
    io_.stop();
    for (auto& thread : io_threads_)
        thread.join();
    io_threads_.clear();
    // Handlers that run now finish (an upload waiting for its body sees `stopping`); queued
    // ones never start.
    pool_.stop();
    pool_.join();
    error_code ignored;
    acceptor_.close(ignored);
}

}  // namespace crucible::net::detail
