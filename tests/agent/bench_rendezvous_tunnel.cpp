// bench_rendezvous_tunnel ([B2 6/8] item 7): what carrying Gloo's connections between servers
// through the launchers costs (core/jobs/rendezvous_tunnel.h). On this machine's loopback, a
// stand-in for a rank's Gloo listener is reached directly and through a proxy and a gate (the
// path a rank on another server takes), runs interleaved: the throughput of a one-way stream
// (gradients) and the time of a small round trip (Gloo's small collectives, the loss sums).
// Over a real network the wire comes between the proxy and the gate; these figures are the
// launchers' own share.
//   bench_rendezvous_tunnel [rounds=5] [mib=255] [round_trips=2000]
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/jobs/rendezvous_tunnel.h"
#include "tests/support/free_port.h"

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using namespace crucible;

namespace {

// A rank's listener: each connection either swallows a stream and answers one byte at its end,
// or echoes 64-byte messages, as its first byte says.
class Sink {
  public:
    Sink() : acceptor_(io_, tcp::endpoint(asio::ip::make_address_v4("127.96.0.2"), 0)) {
        thread_ = std::thread([this] {
            for (;;) {
                tcp::socket s(io_);
                boost::system::error_code ec;
                acceptor_.accept(s, ec);
                if (ec || stopping_) return;
                serve(s);
            }
        });
    }
    ~Sink() {
        // A blocking accept does not end when the acceptor closes: a last connection ends it.
        stopping_ = true;
        asio::io_context io;
        tcp::socket wake(io);
        boost::system::error_code ec;
        wake.connect(acceptor_.local_endpoint(), ec);
        thread_.join();
    }
    int port() const { return acceptor_.local_endpoint().port(); }

  private:
    static void serve(tcp::socket& s) {
        boost::system::error_code ec;
        s.set_option(tcp::no_delay(true), ec);
        char kind = 0;
        asio::read(s, asio::buffer(&kind, 1), ec);
        std::vector<char> buffer(1 << 20);
        if (kind == 's') {  // then the stream's length in MiB, one byte
            unsigned char mib = 0;
            asio::read(s, asio::buffer(&mib, 1), ec);
            for (unsigned i = 0; i < mib && !ec; ++i)
                asio::read(s, asio::buffer(buffer), ec);
            char done = 'd';
            asio::write(s, asio::buffer(&done, 1), ec);
            return;
        }
        while (!ec) {
            asio::read(s, asio::buffer(buffer.data(), 64), ec);
            if (!ec) asio::write(s, asio::buffer(buffer.data(), 64), ec);
        }
    }

    std::atomic<bool> stopping_{false};
    asio::io_context io_;
    tcp::acceptor acceptor_;
    std::thread thread_;
};

// MiB/s of `mib` MiB sent to address:port.
double stream(const std::string& address, int port, int mib) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address_v4(address), static_cast<unsigned short>(port)));
    const std::vector<char> chunk(1 << 20, 'g');
    const auto t0 = Clock::now();
    const char head[2] = {'s', static_cast<char>(mib)};
    asio::write(s, asio::buffer(head));
    for (int i = 0; i < mib; ++i)
        asio::write(s, asio::buffer(chunk));
    char done = 0;
    asio::read(s, asio::buffer(&done, 1));
    return mib / std::chrono::duration<double>(Clock::now() - t0).count();
}

// Microseconds per 64-byte round trip.
double round_trips(const std::string& address, int port, int count) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address_v4(address), static_cast<unsigned short>(port)));
    s.set_option(tcp::no_delay(true));
    asio::write(s, asio::buffer("e", 1));
    char message[64] = {};
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) {
        asio::write(s, asio::buffer(message));
        asio::read(s, asio::buffer(message));
    }
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / count;
}

int argument(int argc, char** argv, int i, int fallback) {
    return argc > i ? std::max(1, std::atoi(argv[i])) : fallback;
}

// "low-high (median m)" of the rounds' figures, with `digits` decimals.
std::string range(std::vector<double> v, int digits) {
    std::sort(v.begin(), v.end());
    char text[96];
    std::snprintf(text, sizeof text, "%.*f-%.*f (median %.*f)", digits, v.front(), digits, v.back(),
                  digits, v[v.size() / 2]);
    return text;
}

// One measure: both sides and their ratio, each as a range over the rounds.
void print_measure(const char* name, const char* unit, const std::vector<double>& direct,
                   const std::vector<double>& tunnel, int digits) {
    std::vector<double> ratio;
    for (std::size_t i = 0; i < direct.size(); ++i)
        ratio.push_back(tunnel[i] / direct[i]);
    std::printf("%-11s direct %s %s\n            proxy+gate %s %s\n            ratio %s\n", name,
                range(direct, digits).c_str(), unit, range(tunnel, digits).c_str(), unit,
                range(ratio, 2).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argument(argc, argv, 1, 5);
    const int mib = std::min(argument(argc, argv, 2, 255), 255);
    const int trips = argument(argc, argv, 3, 2000);
    Sink rank;
    const std::string key(64, 'c');
    const int gate_port = test_support::free_loopback_port();
    jobs::RendezvousGate gate("127.0.0.1", gate_port, 0, key);
    gate.set_local_ranks({{1, "127.96.0.2", rank.port(), "127.0.0.1", gate_port}});
    jobs::RendezvousRelay proxy("127.96.0.3", 0, "127.0.0.1", gate_port, key, "rank 1");
    std::vector<double> direct_mib, tunnel_mib, direct_us, tunnel_us;
    for (int r = 0; r < rounds; ++r) {
        direct_mib.push_back(stream("127.96.0.2", rank.port(), mib));
        tunnel_mib.push_back(stream("127.96.0.3", proxy.port(), mib));
        direct_us.push_back(round_trips("127.96.0.2", rank.port(), trips));
        tunnel_us.push_back(round_trips("127.96.0.3", proxy.port(), trips));
    }
    std::printf("%d interleaved rounds on loopback; %d MiB streams, %d round trips of 64 bytes\n",
                rounds, mib, trips);
    print_measure("stream", "MiB/s", direct_mib, tunnel_mib, 0);
    print_measure("round trip", "us", direct_us, tunnel_us, 1);
    return 0;
}
