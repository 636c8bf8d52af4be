// The rendezvous of a run over several servers under strangers (core/jobs/rendezvous_tunnel.h):
// only a party that proves the run's key gets a byte through to the store, either way round,
// and strangers who flood or stall the gate do not keep the run's own ranks out.
#include "core/jobs/rendezvous_tunnel.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "core/base/rank_plan.h"
#include "core/base/sha256.h"
#include "tests/support/free_port.h"

namespace crucible::jobs {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

const std::string kKey(kShareKeyHexDigits, 'a');
const std::string kOtherKey(kShareKeyHexDigits, 'b');
// The protocol as rendezvous_tunnel.h describes it.
const std::string kGreeting = "CRUCIBLE-RENDEZVOUS-1\n";
constexpr std::size_t kChallengeChars = 64;

// A stand-in for rank 0's store on loopback: echoes what it gets and counts its connections.
class EchoStore {
  public:
    EchoStore() {
        acceptor_.open(tcp::v4());
        acceptor_.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0));
        acceptor_.listen();
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }
    ~EchoStore() {
        io_.stop();
        thread_.join();
    }
    int port() const { return acceptor_.local_endpoint().port(); }
    int connections() const { return connections_; }

  private:
    using Buffer = std::array<char, 1024>;
    void accept() {
        acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
            if (ec) return;
            ++connections_;
            echo(std::make_shared<tcp::socket>(std::move(socket)), std::make_shared<Buffer>());
            accept();
        });
    }
    static void echo(std::shared_ptr<tcp::socket> socket, std::shared_ptr<Buffer> buffer) {
        socket->async_read_some(asio::buffer(*buffer), [=](const error_code& ec, std::size_t n) {
            if (ec) return;
            asio::async_write(*socket, asio::buffer(*buffer, n),
                              [=](const error_code& e, std::size_t) {
                                  if (!e) echo(socket, buffer);
                              });
        });
    }

    std::atomic<int> connections_{0};
    asio::io_context io_;
    tcp::acceptor acceptor_{io_};
    std::thread thread_;
};

// One client connection to 127.0.0.1:port, read from with a time limit.
class Client {
  public:
    explicit Client(int port) : socket_(io_) {
        socket_.connect(
            tcp::endpoint(asio::ip::address_v4::loopback(), static_cast<unsigned short>(port)));
    }
    void send(const std::string& bytes) {
        error_code ec;  // a peer that closed already is the case some tests look for
        asio::write(socket_, asio::buffer(bytes), ec);
    }
    void finish_sending() {
        error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
    }
    // Reads until `want` bytes have come, the peer closed (closed() then says so) or `wait`
    // passed.
    std::string read(std::size_t want, std::chrono::milliseconds wait) {
        std::string got;
        std::array<char, 4096> buffer{};
        std::function<void()> next = [&] {
            socket_.async_read_some(asio::buffer(buffer), [&](const error_code& ec, std::size_t n) {
                if (ec) {
                    closed_ = true;
                    return;
                }
                got.append(buffer.data(), n);
                if (got.size() < want) next();
            });
        };
        next();
        io_.restart();
        io_.run_for(wait);
        if (!io_.stopped()) {  // out of time: the read still pending is dropped
            socket_.cancel();
            io_.run();
            closed_ = false;
        }
        return got;
    }
    bool closed() const { return closed_; }

  private:
    asio::io_context io_;
    tcp::socket socket_;
    bool closed_ = false;
};

// What a relay holding `key` answers to a gate's greeting.
std::string answer(const std::string& key, const std::string& greeting,
                   const std::string& relay_challenge) {
    const std::string gate_challenge = greeting.substr(kGreeting.size());
    return relay_challenge + hmac_sha256(key, "relay" + gate_challenge + relay_challenge);
}

TEST(RendezvousTunnel, RanksThatProveTheKeyReachTheStoreThroughGateAndRelay) {
    EchoStore store;
    const int gate_port = test_support::free_loopback_port();
    RendezvousGate gate("127.0.0.1", gate_port, store.port(), kKey);
    RendezvousRelay relay("127.0.0.1", gate_port, kKey);
    Client first(relay.port()), second(relay.port());
    first.send("ping");
    second.send("pong!");
    EXPECT_EQ(first.read(4, 10s), "ping");
    EXPECT_EQ(second.read(5, 10s), "pong!");
    EXPECT_EQ(store.connections(), 2);
    EXPECT_EQ(gate.passed(), 2);
    EXPECT_EQ(relay.passed(), 2);
    EXPECT_EQ(gate.refused() + relay.refused(), 0);
}

TEST(RendezvousTunnel, ARelayWithAnotherKeyGetsNothingFromTheStore) {
    EchoStore store;
    const int gate_port = test_support::free_loopback_port();
    RendezvousGate gate("127.0.0.1", gate_port, store.port(), kKey);
    RendezvousRelay relay("127.0.0.1", gate_port, kOtherKey);
    Client rank(relay.port());
    rank.send("ping");
    EXPECT_EQ(rank.read(4, 10s), "");
    EXPECT_TRUE(rank.closed()) << "the rank's connection ends, so the rank fails at once";
    EXPECT_EQ(store.connections(), 0);
    EXPECT_EQ(gate.refused(), 1);
    EXPECT_EQ(relay.refused(), 1);
}

// A stranger posing as the gate, who accepts any proof and answers with one of its own making:
// the relay sends it nothing of the rank's.
TEST(RendezvousTunnel, ARelayDoesNotTrustAGateThatCannotProveTheKey) {
    asio::io_context io;
    tcp::acceptor fake(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    std::string after_proof;
    std::thread stranger([&] {
        tcp::socket s(io);
        fake.accept(s);
        asio::write(s, asio::buffer(kGreeting + std::string(kChallengeChars, 'x')));
        std::string relay_answer(kChallengeChars + 32, '\0');
        asio::read(s, asio::buffer(relay_answer));
        asio::write(s, asio::buffer(std::string(32, 'z')));
        std::array<char, 64> rest{};
        error_code ec;
        const std::size_t n = s.read_some(asio::buffer(rest), ec);
        if (!ec) after_proof.assign(rest.data(), n);
    });
    RendezvousRelay relay("127.0.0.1", fake.local_endpoint().port(), kKey);
    Client rank(relay.port());
    rank.send("the rank's store traffic");
    EXPECT_EQ(rank.read(1, 10s), "");
    EXPECT_TRUE(rank.closed());
    stranger.join();
    EXPECT_EQ(after_proof, "") << "the relay passed the rank's bytes to a stranger";
    EXPECT_EQ(relay.refused(), 1);
    EXPECT_EQ(relay.passed(), 0);
}

// Strangers at the gate, each on a connection of its own: nothing reaches the store until the
// last, which proves the key as the protocol says and is answered with the gate's own proof.
TEST(RendezvousTunnel, StrangersAtTheGateAreRefused) {
    EchoStore store;
    const int gate_port = test_support::free_loopback_port();
    RendezvousGate gate("127.0.0.1", gate_port, store.port(), kKey);
    const std::size_t greeting_size = kGreeting.size() + kChallengeChars;
    const std::string challenge(kChallengeChars, '1');

    struct Stranger {
        const char* what;
        std::function<std::string(const std::string& greeting)> says;
    };
    std::string earlier_greeting;
    {
        Client c(gate_port);
        earlier_greeting = c.read(greeting_size, 10s);
    }
    const std::vector<Stranger> strangers = {
        {"c10d store traffic straight away",
         [](const std::string&) {
             return std::string("\x00\x00\x00\x01validate", 13) + std::string(83, '\x01');
         }},
        {"an answer made with another key",
         [&](const std::string& g) { return answer(kOtherKey, g, challenge); }},
        {"a right answer to another connection's challenge (a replay)",
         [&](const std::string&) { return answer(kKey, earlier_greeting, challenge); }},
        {"a megabyte of junk", [](const std::string&) { return std::string(1 << 20, 'j'); }},
        {"half an answer, then gone",
         [&](const std::string& g) { return answer(kKey, g, challenge).substr(0, 40); }},
        {"an empty answer, then gone", [](const std::string&) { return std::string(); }},
        {"non-UTF-8 and Chinese bytes",
         [](const std::string&) {
             return std::string("\xff\xfe 数据集 \xc0") + std::string(80, '\x80');
         }},
    };
    for (const auto& s : strangers) {
        Client c(gate_port);
        const std::string greeting = c.read(greeting_size, 10s);
        ASSERT_EQ(greeting.substr(0, kGreeting.size()), kGreeting) << s.what;
        c.send(s.says(greeting));
        c.send("ping");
        c.finish_sending();
        EXPECT_EQ(c.read(1, 10s), "") << s.what;
        EXPECT_TRUE(c.closed()) << s.what;
    }
    EXPECT_EQ(store.connections(), 0);
    EXPECT_EQ(gate.refused(), static_cast<int>(strangers.size()) + 1);  // + the first reader

    // The protocol as documented: the gate proves the key back, then the store answers.
    Client c(gate_port);
    const std::string greeting = c.read(greeting_size, 10s);
    c.send(answer(kKey, greeting, challenge));
    const std::string gate_proof = c.read(32, 10s);
    EXPECT_EQ(gate_proof,
              hmac_sha256(kKey, "gate" + greeting.substr(kGreeting.size()) + challenge));
    c.send("ping");
    EXPECT_EQ(c.read(4, 10s), "ping");
    EXPECT_EQ(store.connections(), 1);
}

// Silent strangers hold the gate's slots for unproved connections; the slots free after the
// proof time, and a relay that found the gate full gets in then (one run of about 10 s).
TEST(RendezvousTunnel, SilentStrangersAreClosedAndDoNotKeepTheRunOut) {
    EchoStore store;
    const int gate_port = test_support::free_loopback_port();
    RendezvousGate gate("127.0.0.1", gate_port, store.port(), kKey);
    std::vector<std::unique_ptr<Client>> silent;
    for (int i = 0; i < 70; ++i)
        silent.push_back(std::make_unique<Client>(gate_port));
    RendezvousRelay relay("127.0.0.1", gate_port, kKey);
    Client rank(relay.port());
    rank.send("ping");
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(rank.read(4, 30s), "ping");
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, 5s) << "the relay got in while 64 strangers held the gate";
    int closed = 0;
    for (auto& s : silent) {
        s->read(kGreeting.size() + kChallengeChars + 1, 2s);
        closed += s->closed();
    }
    EXPECT_EQ(closed, 70) << "every silent stranger is closed";
    EXPECT_EQ(store.connections(), 1);
}

}  // namespace
}  // namespace crucible::jobs
