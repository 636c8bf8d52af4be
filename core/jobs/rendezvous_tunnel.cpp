#include "core/jobs/rendezvous_tunnel.h"

#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <string_view>
#include <thread>

#include "core/base/error.h"
#include "core/base/sha256.h"

namespace crucible::jobs {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kGreeting = "CRUCIBLE-RENDEZVOUS-1\n";
constexpr std::size_t kChallengeChars = 64;  // 32 random bytes as hex
constexpr std::size_t kProofBytes = 32;      // an HMAC-SHA256
constexpr auto kProofTime = std::chrono::seconds(10);
// How long the gate waits for rank 0's store to open, and a relay for the gate: the servers'
// schedulers start their shares of a run independently.
constexpr auto kReachTime = std::chrono::minutes(5);
constexpr auto kRetryPeriod = std::chrono::milliseconds(200);
// Connections still proving themselves; more are closed at once (a stranger's flood).
constexpr int kMaxUnproved = 64;

std::string proof(const std::string& key, std::string_view role, const std::string& gate_challenge,
                  const std::string& relay_challenge) {
    std::string message(role);
    message += gate_challenge;
    message += relay_challenge;
    return hmac_sha256(key, message);
}

std::string endpoint_text(const tcp::socket& socket) {
    error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    return ec ? std::string("?")
              : remote.address().to_string() + ":" + std::to_string(remote.port());
}

// What both ends share: the listening socket, its thread and the counts.
struct Tunnel {
    std::atomic<int> refused{0}, passed{0}, unproved{0};
    std::string key;
    asio::io_context io;
    tcp::acceptor acceptor{io};
    asio::steady_timer accept_pause{io};
    std::thread thread;

    void listen(const tcp::endpoint& at, const std::string& what) {
        error_code ec;
        acceptor.open(at.protocol(), ec);
#ifndef _WIN32
        // Lets a run's port be taken again while an earlier connection lingers in TIME_WAIT. On
        // Windows SO_REUSEADDR would let another process bind the same port over ours.
        if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
#endif
        if (!ec) acceptor.bind(at, ec);
        if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (ec)
            throw Error("cannot listen for " + what + " at " + at.address().to_string() + ":" +
                        std::to_string(at.port()) + ": " + ec.message());
    }

    void start(std::function<void(tcp::socket)> on_accept) {
        accept(std::move(on_accept));
        thread = std::thread([this] {
            // A handler that throws (no randomness for a challenge, say) costs that connection,
            // never the run's other connections.
            for (;;) {
                try {
                    io.run();
                    return;
                } catch (const std::exception& e) {
                    spdlog::error("rendezvous tunnel: {}", e.what());
                }
            }
        });
    }

    void accept(std::function<void(tcp::socket)> on_accept) {
        acceptor.async_accept([this, on_accept](const error_code& ec, tcp::socket socket) {
            if (ec == asio::error::operation_aborted) return;
            if (ec) {  // out of descriptors, say: pause rather than spin
                accept_pause.expires_after(kRetryPeriod);
                accept_pause.async_wait([this, on_accept](const error_code& e) {
                    if (!e) accept(on_accept);
                });
                return;
            }
            on_accept(std::move(socket));
            accept(on_accept);
        });
    }

    void stop() {
        io.stop();
        if (thread.joinable()) thread.join();
    }
};

// Carries bytes both ways between two sockets until either side closes.
class Pipe : public std::enable_shared_from_this<Pipe> {
  public:
    Pipe(tcp::socket a, tcp::socket b) : sockets_{std::move(a), std::move(b)} {}

    void start() {
        pump(0);
        pump(1);
    }

  private:
    void pump(int from) {
        auto self = shared_from_this();
        auto& buffer = buffers_[static_cast<std::size_t>(from)];
        sockets_[static_cast<std::size_t>(from)].async_read_some(
            asio::buffer(buffer), [self, from](const error_code& ec, std::size_t n) {
                if (ec) return self->close();
                asio::async_write(self->sockets_[static_cast<std::size_t>(1 - from)],
                                  asio::buffer(self->buffers_[static_cast<std::size_t>(from)], n),
                                  [self, from](const error_code& e, std::size_t) {
                                      if (e) return self->close();
                                      self->pump(from);
                                  });
            });
    }

    void close() {
        for (auto& socket : sockets_) {
            error_code ignored;
            socket.shutdown(tcp::socket::shutdown_both, ignored);
            socket.close(ignored);
        }
    }

    std::array<tcp::socket, 2> sockets_;
    std::array<std::array<char, 64 * 1024>, 2> buffers_{};
};

// One connection at the gate: the proof, then on to the store.
class GateSession : public std::enable_shared_from_this<GateSession> {
  public:
    GateSession(tcp::socket peer, Tunnel& tunnel, int store_port)
        : peer_(std::move(peer)),
          store_(tunnel.io),
          timer_(tunnel.io),
          tunnel_(tunnel),
          store_port_(store_port),
          from_(endpoint_text(peer_)) {
        ++tunnel_.unproved;
    }
    ~GateSession() {
        if (!proved_) --tunnel_.unproved;
    }

    void start() {
        auto self = shared_from_this();
        timer_.expires_after(kProofTime);
        timer_.async_wait([self](const error_code& ec) {
            if (!ec) self->refuse("no proof of the run's key within 10 s");
        });
        challenge_ = random_hex(kChallengeChars / 2);
        out_ = std::string(kGreeting) + challenge_;
        asio::async_write(peer_, asio::buffer(out_), [self](const error_code& ec, std::size_t) {
            if (ec) return self->refuse("closed before the proof");
            self->in_.assign(kChallengeChars + kProofBytes, '\0');
            asio::async_read(self->peer_, asio::buffer(self->in_),
                             [self](const error_code& e, std::size_t) { self->check(e); });
        });
    }

  private:
    void check(const error_code& ec) {
        if (ec) return refuse("closed before the proof");
        const std::string relay_challenge = in_.substr(0, kChallengeChars);
        const std::string relay_proof = in_.substr(kChallengeChars);
        if (!constant_time_equal(relay_proof,
                                 proof(tunnel_.key, "relay", challenge_, relay_challenge)))
            return refuse("a wrong proof of the run's key");
        proved_ = true;
        --tunnel_.unproved;
        timer_.cancel();
        out_ = proof(tunnel_.key, "gate", challenge_, relay_challenge);
        auto self = shared_from_this();
        asio::async_write(peer_, asio::buffer(out_), [self](const error_code& e, std::size_t) {
            if (e) return self->close();
            self->deadline_ = Clock::now() + kReachTime;
            self->reach_store();
        });
    }

    void reach_store() {
        auto self = shared_from_this();
        store_.async_connect(
            tcp::endpoint(asio::ip::address_v4::loopback(),
                          static_cast<unsigned short>(store_port_)),
            [self](const error_code& ec) {
                if (!ec) {
                    ++self->tunnel_.passed;
                    std::make_shared<Pipe>(std::move(self->peer_), std::move(self->store_))
                        ->start();
                    return;
                }
                if (Clock::now() >= self->deadline_) {
                    spdlog::warn(
                        "rendezvous: the store on 127.0.0.1:{} did not open within {} s",
                        self->store_port_,
                        std::chrono::duration_cast<std::chrono::seconds>(kReachTime).count());
                    return self->close();
                }
                error_code ignored;
                self->store_.close(ignored);
                self->timer_.expires_after(kRetryPeriod);
                self->timer_.async_wait([self](const error_code& e) {
                    if (!e) self->reach_store();
                });
            });
    }

    void refuse(const std::string& why) {
        if (proved_ || closed_) return;
        ++tunnel_.refused;
        spdlog::warn("rendezvous: refused {}: {}", from_, why);
        close();
    }

    void close() {
        closed_ = true;
        error_code ignored;
        timer_.cancel();
        peer_.close(ignored);
        store_.close(ignored);
    }

    tcp::socket peer_, store_;
    asio::steady_timer timer_;
    Tunnel& tunnel_;
    int store_port_;
    std::string from_, challenge_, out_, in_;
    Clock::time_point deadline_;
    bool proved_ = false, closed_ = false;
};

// One rank's connection at a relay: to the gate, the proof, then the pipe.
class RelaySession : public std::enable_shared_from_this<RelaySession> {
  public:
    RelaySession(tcp::socket rank, Tunnel& tunnel, tcp::endpoint gate)
        : rank_(std::move(rank)),
          gate_(tunnel.io),
          timer_(tunnel.io),
          tunnel_(tunnel),
          gate_at_(gate),
          deadline_(Clock::now() + kReachTime) {}

    void start() { connect(); }

  private:
    std::string gate_text() const {
        return gate_at_.address().to_string() + ":" + std::to_string(gate_at_.port());
    }

    void connect() {
        auto self = shared_from_this();
        gate_.async_connect(gate_at_, [self](const error_code& ec) {
            if (ec) return self->retry(ec.message());
            self->read_greeting();
        });
    }

    // The gate is not up yet, or busy with strangers (it closes connections beyond its
    // limit before greeting them): again shortly, up to the deadline.
    void retry(const std::string& why) {
        error_code ignored;
        gate_.close(ignored);
        if (Clock::now() >= deadline_) {
            spdlog::warn("rendezvous: the gate at {} did not let us in within {} s: {}",
                         gate_text(),
                         std::chrono::duration_cast<std::chrono::seconds>(kReachTime).count(), why);
            return close();
        }
        auto self = shared_from_this();
        timer_.expires_after(kRetryPeriod);
        timer_.async_wait([self](const error_code& e) {
            if (!e) self->connect();
        });
    }

    void read_greeting() {
        auto self = shared_from_this();
        timer_.expires_after(kProofTime);  // a gate that never greets is tried again
        timer_.async_wait([self](const error_code& ec) {
            error_code ignored;
            if (!ec) self->gate_.close(ignored);
        });
        in_.assign(kGreeting.size() + kChallengeChars, '\0');
        asio::async_read(gate_, asio::buffer(in_), [self](const error_code& ec, std::size_t) {
            if (ec) return self->retry("closed before greeting: " + ec.message());
            self->timer_.expires_after(kProofTime);
            self->timer_.async_wait([self](const error_code& e) {
                if (!e) self->refuse("no proof of the run's key within 10 s");
            });
            if (std::string_view(self->in_).substr(0, kGreeting.size()) != kGreeting)
                return self->refuse("not a Crucible rendezvous gate");
            self->gate_challenge_ = self->in_.substr(kGreeting.size());
            self->challenge_ = random_hex(kChallengeChars / 2);
            self->out_ = self->challenge_ +
                         proof(self->tunnel_.key, "relay", self->gate_challenge_, self->challenge_);
            asio::async_write(self->gate_, asio::buffer(self->out_),
                              [self](const error_code& e, std::size_t) {
                                  if (e) return self->refuse("closed before the proof");
                                  self->read_proof();
                              });
        });
    }

    void read_proof() {
        auto self = shared_from_this();
        in_.assign(kProofBytes, '\0');
        asio::async_read(gate_, asio::buffer(in_), [self](const error_code& ec, std::size_t) {
            // A gate that closes here refused our proof: the keys differ.
            if (ec) return self->refuse("it closed the connection (a different key?)");
            if (!constant_time_equal(self->in_, proof(self->tunnel_.key, "gate",
                                                      self->gate_challenge_, self->challenge_)))
                return self->refuse("a wrong proof of the run's key");
            self->timer_.cancel();
            ++self->tunnel_.passed;
            std::make_shared<Pipe>(std::move(self->rank_), std::move(self->gate_))->start();
        });
    }

    void refuse(const std::string& why) {
        if (closed_) return;
        ++tunnel_.refused;
        spdlog::warn("rendezvous: the gate at {} was refused: {}", gate_text(), why);
        close();
    }

    void close() {
        closed_ = true;
        error_code ignored;
        timer_.cancel();
        rank_.close(ignored);
        gate_.close(ignored);
    }

    tcp::socket rank_, gate_;
    asio::steady_timer timer_;
    Tunnel& tunnel_;
    tcp::endpoint gate_at_;
    Clock::time_point deadline_;
    std::string gate_challenge_, challenge_, out_, in_;
    bool closed_ = false;
};

tcp::endpoint resolve(const std::string& host, int port, const std::string& what) {
    asio::io_context io;
    tcp::resolver resolver(io);
    error_code ec;
    const auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty())
        throw Error("cannot resolve " + what + " " + host + ": " +
                    (ec ? ec.message() : std::string("no address")));
    return *results.begin();
}

}  // namespace

struct RendezvousGate::State : Tunnel {};

RendezvousGate::RendezvousGate(const std::string& host, int port, int store_port,
                               const std::string& key)
    : state_(std::make_unique<State>()) {
    state_->key = key;
    state_->listen(resolve(host, port, "the cluster address"), "the run's other servers");
    Tunnel& tunnel = *state_;
    state_->start([&tunnel, store_port](tcp::socket socket) {
        if (tunnel.unproved >= kMaxUnproved) {
            ++tunnel.refused;
            return;  // closed as it goes out of scope
        }
        std::make_shared<GateSession>(std::move(socket), tunnel, store_port)->start();
    });
}

RendezvousGate::~RendezvousGate() {
    state_->stop();
}

int RendezvousGate::refused() const {
    return state_->refused;
}
int RendezvousGate::passed() const {
    return state_->passed;
}

struct RendezvousRelay::State : Tunnel {};

RendezvousRelay::RendezvousRelay(const std::string& gate_host, int gate_port,
                                 const std::string& key)
    : state_(std::make_unique<State>()) {
    state_->key = key;
    const tcp::endpoint gate = resolve(gate_host, gate_port, "the run's first server");
    state_->listen(tcp::endpoint(asio::ip::address_v4::loopback(), 0), "this server's ranks");
    Tunnel& tunnel = *state_;
    state_->start([&tunnel, gate](tcp::socket socket) {
        std::make_shared<RelaySession>(std::move(socket), tunnel, gate)->start();
    });
}

RendezvousRelay::~RendezvousRelay() {
    state_->stop();
}

int RendezvousRelay::port() const {
    return state_->acceptor.local_endpoint().port();
}
int RendezvousRelay::refused() const {
    return state_->refused;
}
int RendezvousRelay::passed() const {
    return state_->passed;
}

}  // namespace crucible::jobs
