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
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "core/base/error.h"
#include "core/base/rank_plan.h"
#include "core/base/sha256.h"
#include "core/jobs/server_mesh.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"

namespace crucible::jobs {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

const std::string kKey(kShareKeyHexDigits, 'a');
const std::string kOtherKey(kShareKeyHexDigits, 'b');
// The protocol as rendezvous_tunnel.h describes it.
const std::string kGreeting = "CRUCIBLE-RENDEZVOUS-2\n";
constexpr std::size_t kChallengeChars = 64;

// A stand-in for rank 0's store, or a rank's Gloo listener, on loopback: echoes what it gets
// and counts its connections.
class EchoStore {
  public:
    explicit EchoStore(const std::string& address = "127.0.0.1") {
        acceptor_.open(tcp::v4());
        acceptor_.bind(tcp::endpoint(asio::ip::make_address_v4(address), 0));
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

// One client connection to address:port, read from with a time limit.
class Client {
  public:
    explicit Client(int port, const std::string& address = "127.0.0.1") : socket_(io_) {
        socket_.connect(
            tcp::endpoint(asio::ip::make_address_v4(address), static_cast<unsigned short>(port)));
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

// A request or an answer's length: 4 bytes, big-endian.
std::string length_bytes(std::size_t n) {
    return {static_cast<char>(n >> 24), static_cast<char>((n >> 16) & 0xff),
            static_cast<char>((n >> 8) & 0xff), static_cast<char>(n & 0xff)};
}

// A client that has proved the key to the gate at `gate_port` and sent `request` (already
// framed, or anything else a hostile party may send); what the gate answers comes next.
std::unique_ptr<Client> proved_client(int gate_port, const std::string& raw_request) {
    auto c = std::make_unique<Client>(gate_port);
    const std::string greeting = c->read(kGreeting.size() + kChallengeChars, 10s);
    const std::string challenge(kChallengeChars, '7');
    c->send(answer(kKey, greeting, challenge));
    EXPECT_EQ(c->read(32, 10s).size(), 32u);
    c->send(raw_request);
    return c;
}

std::string framed(const std::string& request) {
    return length_bytes(request.size()) + request;
}

// The gate's answer: status and text ("" when the gate closed without one).
std::string read_answer(Client& c) {
    std::string got = c.read(5, 10s);
    if (got.size() < 5) return "";
    const std::size_t n = (static_cast<std::size_t>(static_cast<unsigned char>(got[1])) << 24) |
                          (static_cast<std::size_t>(static_cast<unsigned char>(got[2])) << 16) |
                          (static_cast<std::size_t>(static_cast<unsigned char>(got[3])) << 8) |
                          static_cast<unsigned char>(got[4]);
    if (got.size() < 5 + n) got += c.read(5 + n - got.size(), 10s);
    return got.substr(0, 1) + got.substr(5);
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
    c.send(framed("store"));
    EXPECT_EQ(read_answer(c), "+ok");
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

// A proved party gets only what the gate serves: the store where the gate has it, and the Gloo
// listeners of the gate's own server's ranks; any other request is declined with the reason and
// the connection closed.
TEST(RendezvousTunnel, AProvedPartyReachesOnlyTheStoreAndTheRanksOfTheGatesServer) {
    EchoStore rank3("127.92.0.4");
    const int gate_port = test_support::free_loopback_port();
    RendezvousGate gate("127.0.0.1", gate_port, 0, kKey);  // a server without the store
    const auto declined = [&](const std::string& raw, const std::string& why) {
        auto c = proved_client(gate_port, raw);
        const std::string got = read_answer(*c);
        EXPECT_EQ(got.substr(0, 1), "-") << why;
        EXPECT_NE(got.find(why), std::string::npos) << got;
        c->read(1, 10s);
        EXPECT_TRUE(c->closed()) << why;
    };
    declined(framed("store"), "the run's store is not on this server");
    declined(framed("rank 3"), "no such rank on this server");  // not set yet
    gate.set_local_ranks({{3, "127.92.0.4", rank3.port(), "127.0.0.1", gate_port}});
    for (const char* request : {"rank 4", "rank -1", "rank 3x", "rank ", "rank 99999999999"})
        declined(framed(request), "no such rank on this server");
    declined(framed("mesh []"), "an unknown request");  // only rank 0's server keeps the table
    declined(framed("GET / HTTP/1.1"), "an unknown request");
    declined(framed("\xff\xfe 数据集"), "an unknown request");
    declined(length_bytes(0), "a request of 0 bytes");
    declined(length_bytes(64u << 20) + "x", "a request of 67108864 bytes");
    EXPECT_EQ(rank3.connections(), 0);

    auto c = proved_client(gate_port, framed("rank 3"));
    EXPECT_EQ(read_answer(*c), "+ok");
    c->send("gloo bytes");
    EXPECT_EQ(c->read(10, 10s), "gloo bytes");
    EXPECT_EQ(rank3.connections(), 1);
    EXPECT_EQ(gate.passed(), 1);
}

// A proxy stands for another server's rank on this server's loopback: a rank here connects to
// it as to the rank itself, and the bytes go through both gates' proof to the rank's listener.
TEST(RendezvousTunnel, AProxyCarriesARankToAnotherServersRankThroughItsGate) {
    EchoStore rank1("127.93.0.2");  // rank 1's Gloo listener, on "the other server"
    const int gate_port = test_support::free_loopback_port();
    RendezvousGate gate("127.0.0.1", gate_port, 0, kKey);
    gate.set_local_ranks({{1, "127.93.0.2", rank1.port(), "127.0.0.1", gate_port}});
    // On one machine the proxy cannot take rank 1's own address and port: another address.
    RendezvousRelay proxy("127.94.0.2", 0, "127.0.0.1", gate_port, kKey, "rank 1");
    Client rank0(proxy.port(), "127.94.0.2");
    rank0.send("a gradient");
    EXPECT_EQ(rank0.read(10, 10s), "a gradient");
    EXPECT_EQ(rank1.connections(), 1);
    EXPECT_EQ(proxy.passed(), 1);

    // A proxy for a rank that gate does not have, and one with another key: closed at once.
    RendezvousRelay lost("127.94.0.3", 0, "127.0.0.1", gate_port, kKey, "rank 2");
    Client to_lost(lost.port(), "127.94.0.3");
    to_lost.send("x");
    EXPECT_EQ(to_lost.read(1, 10s), "");
    EXPECT_TRUE(to_lost.closed());
    RendezvousRelay stranger("127.94.0.4", 0, "127.0.0.1", gate_port, kOtherKey, "rank 1");
    Client to_stranger(stranger.port(), "127.94.0.4");
    to_stranger.send("x");
    EXPECT_EQ(to_stranger.read(1, 10s), "");
    EXPECT_TRUE(to_stranger.closed());
    EXPECT_EQ(rank1.connections(), 1);
    EXPECT_EQ(lost.refused(), 1);
    EXPECT_EQ(stranger.refused(), 1);
    // A proxy listens on loopback only.
    EXPECT_THROW(RendezvousRelay("0.0.0.0", 0, "127.0.0.1", gate_port, kKey, "rank 1"), Error);
}

// Rank 0's gate collects every server's ranks and answers each with the whole table once the
// last is in; a table entry that would make a proxy bind off loopback, or name a rank outside
// the world, is declined.
TEST(RendezvousTunnel, TheTableIsWholeOnceEveryServerHasSentItsRanks) {
    EchoStore store;
    const int gate_port = test_support::free_loopback_port();
    RendezvousGate gate("127.0.0.1", gate_port, store.port(), kKey, 4);
    const auto never = [] { return false; };
    std::vector<MeshRank> from_b, from_c;
    std::thread b([&] {
        from_b = exchange_mesh_table("127.0.0.1", gate_port, kKey, 4,
                                     {{1, "127.95.0.2", 4001, "10.0.0.2", 29401},
                                      {2, "127.95.0.3", 4002, "10.0.0.2", 29401}},
                                     never);
    });
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(from_b.empty()) << "answered before the table was whole";
    gate.set_local_ranks({{0, "127.95.0.1", 4000, "127.0.0.1", gate_port}});
    std::thread c([&] {
        from_c = exchange_mesh_table("127.0.0.1", gate_port, kKey, 4,
                                     {{3, "127.95.0.4", 4003, "10.0.0.3", 29402}}, never);
    });
    const std::vector<MeshRank> table = gate.mesh_table(never);
    b.join();
    c.join();
    ASSERT_EQ(table.size(), 4u);
    for (const auto* got : {&from_b, &from_c}) {
        ASSERT_EQ(got->size(), 4u);
        for (int r = 0; r < 4; ++r) {
            EXPECT_EQ((*got)[r].rank, r);
            EXPECT_EQ((*got)[r].address, "127.95.0." + std::to_string(r + 1));
            EXPECT_EQ((*got)[r].port, 4000 + r);
            EXPECT_EQ((*got)[r].gate_host, table[r].gate_host);
            EXPECT_EQ((*got)[r].gate_port, table[r].gate_port);
        }
    }
    EXPECT_EQ(from_b[3].gate_host, "10.0.0.3");

    const auto declined = [&](const std::vector<MeshRank>& ranks, const std::string& why) {
        try {
            exchange_mesh_table("127.0.0.1", gate_port, kKey, 4, ranks, never);
            ADD_FAILURE() << "accepted: " << why;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    declined({{1, "10.0.0.9", 4001, "10.0.0.2", 29401}}, "is not a loopback address");
    declined({{1, "0.0.0.0", 4001, "10.0.0.2", 29401}}, "is not a loopback address");
    declined({{7, "127.95.0.8", 4001, "10.0.0.2", 29401}}, "outside a world of 4");
    declined({{1, "127.95.0.9", 4009, "10.0.0.2", 29401}}, "was sent twice");
    declined({{1, "127.95.0.2", 0, "10.0.0.2", 29401}}, "a port out of range");
    declined({{1, "127.95.0.2", 4001, "10.0.0.2", 0}}, "is not HOST:PORT");
    for (const std::string& raw :
         {std::string("mesh {"), std::string("mesh ") + std::string(300, '['),
          std::string("mesh {\"rank\": 1}"), std::string("mesh [1, 2]"),
          std::string("mesh [{\"rank\": \"1\"}]")}) {
        auto client = proved_client(gate_port, framed(raw));
        EXPECT_EQ(read_answer(*client).substr(0, 1), "-") << raw.substr(0, 40);
    }
    // A server of another run (another key) gets nothing.
    EXPECT_THROW(exchange_mesh_table("127.0.0.1", gate_port, kOtherKey, 4, {}, never), Error);
}

TEST(RendezvousTunnel, EachRankOfARunHasItsOwnLoopbackAddress) {
    std::set<std::string> seen;
    for (int rank = 0; rank < 600; ++rank) {
        const std::string a = mesh_rank_address(kKey, rank);
        EXPECT_EQ(a.substr(0, 4), "127.") << a;
        EXPECT_NE(a, "127.0.0.1");
        error_code ec;
        EXPECT_TRUE(asio::ip::make_address_v4(a, ec).is_loopback()) << a;
        EXPECT_TRUE(seen.insert(a).second) << a;
    }
    EXPECT_NE(mesh_rank_address(std::string(kShareKeyHexDigits, '0'), 0),
              mesh_rank_address(std::string(kShareKeyHexDigits, '5'), 0));
    // The key's first byte (0xaa = 170) picks the net, 1 + 170 % 254; the host is rank + 1.
    EXPECT_EQ(mesh_rank_address(kKey, 3), "127.171.0.4");
    EXPECT_EQ(mesh_rank_address(kKey, 255), "127.171.1.0");
}

// A second server's launcher part (ServerMesh): it finds its rank's Gloo port, trades it at
// rank 0's gate for the table, and writes mesh.ready once the other servers' ranks are
// reachable: here directly, both "servers" being this machine. A rank whose address cannot be
// taken for its proxy (a stranger's wildcard listener holds the port) fails the mesh, naming
// the address, and the ranks never get mesh.ready.
TEST(ServerMesh, ASecondServerReachesTheFirstsRanksOrSaysWhyNot) {
    for (const bool port_held : {false, true}) {
        test_support::TempDir dir{"server_mesh"};
        EchoStore store;
        const int hub_port = test_support::free_loopback_port();
        RendezvousGate hub("127.0.0.1", hub_port, store.port(), kKey, 2);
        asio::io_context io;
        // Rank 0's Gloo listener, on this machine; or only a stranger's wildcard listener on its
        // port.
        std::optional<EchoStore> rank0;
        std::optional<tcp::acceptor> wildcard;
        int rank0_port = 0;
        if (port_held) {
            wildcard.emplace(io, tcp::endpoint(asio::ip::address_v4::any(), 0));
            rank0_port = wildcard->local_endpoint().port();
        } else {
            rank0.emplace("127.97.0.1");
            rank0_port = rank0->port();
        }
        hub.set_local_ranks({{0, "127.97.0.1", rank0_port, "127.0.0.1", hub_port}});

        ServerShare share;
        share.first_rank = 1;
        share.world_size = 2;
        share.store_host = "127.0.0.1";
        share.store_port = hub_port;
        share.host = "127.0.0.1";
        share.gate_port = test_support::free_loopback_port();
        share.key = kKey;
        const auto ready = dir.path() / "mesh.ready";
        ServerMesh mesh(share, 1, ready);
        EchoStore rank1(mesh.rank_address(1));  // this server's rank, Gloo bound
        mesh.start();
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!std::filesystem::exists(ready) && !mesh.error() &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(20ms);
        if (port_held) {
            ASSERT_TRUE(mesh.error());
            EXPECT_NE(mesh.error()->find("127.97.0.1:" + std::to_string(rank0_port)),
                      std::string::npos)
                << *mesh.error();
            EXPECT_FALSE(std::filesystem::exists(ready));
        } else {
            EXPECT_FALSE(mesh.error()) << *mesh.error();
            EXPECT_TRUE(std::filesystem::exists(ready));
            EXPECT_EQ(mesh.proxies(), 0) << "rank 0 listens on this machine already";
            // The table reached rank 0's server too, with this server's rank and gate.
            const auto table = hub.mesh_table([] { return false; });
            ASSERT_EQ(table.size(), 2u);
            EXPECT_EQ(table[1].address, mesh.rank_address(1));
            EXPECT_EQ(table[1].port, rank1.port());
            EXPECT_EQ(table[1].gate_port, share.gate_port);
        }
        // The relay to the store carries this server's ranks to rank 0's store.
        Client to_store(mesh.store_port());
        to_store.send("ping");
        EXPECT_EQ(to_store.read(4, 10s), "ping");
    }
}

}  // namespace
}  // namespace crucible::jobs
