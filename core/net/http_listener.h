#pragma once
// Internal to the agent's server (http_server.h): the io threads, the handler pool, the TLS
// context and the accepting socket. It counts connections in all and per address and closes a
// new one over either cap at once; each accepted one is served by http_connection.h. Routing
// and authentication are the HttpApp's (http_server.cpp); this file knows neither.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/net/http_connection.h"

namespace crucible::net::detail {

class HttpListener {
  public:
    // Loads the certificate and key when the options name both (throws Error when they do not
    // load). `app` must outlive the listener.
    HttpListener(const HttpServerOptions& options, HttpApp& app);
    ~HttpListener();
    HttpListener(const HttpListener&) = delete;
    HttpListener& operator=(const HttpListener&) = delete;

    bool tls() const { return tls_ != nullptr; }
    // Binds options.host:options.port and starts the threads; returns the bound port. Throws
    // Error when the address cannot be bound.
    int start();
    // Stops accepting, ends every connection and joins the threads (a handler that runs is
    // waited for). Idempotent.
    void stop();
    std::size_t connections() const { return shared_->open_connections(); }

  private:
    void accept();
    void on_accept(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);

    // Declared first, destroyed last: the connections that pending work of the pool and of
    // the io threads holds use it (and the TLS context).
    boost::asio::io_context io_;
    std::unique_ptr<boost::asio::ssl::context> tls_;
    boost::asio::thread_pool pool_;
    boost::asio::strand<boost::asio::io_context::executor_type> accept_strand_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_;
    std::shared_ptr<ServerShared> shared_;
    std::vector<std::thread> io_threads_;
    bool started_ = false;
    bool stopped_ = false;
};

}  // namespace crucible::net::detail
