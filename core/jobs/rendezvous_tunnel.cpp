#include "core/jobs/rendezvous_tunnel.h"

#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/base/rank_plan.h"
#include "core/base/sha256.h"

namespace crucible::jobs {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kGreeting = "CRUCIBLE-RENDEZVOUS-2\n";
constexpr std::size_t kChallengeChars = 64;  // 32 random bytes as hex
constexpr std::size_t kProofBytes = 32;      // an HMAC-SHA256
constexpr std::size_t kLengthBytes = 4;      // before a request and an answer's text
// A request or an answer longer than this is refused: a table of 65536 ranks fits.
constexpr std::uint32_t kMaxMessage = 8u << 20;
constexpr auto kProofTime = std::chrono::seconds(10);
// How long the gate waits for rank 0's store to open, and a relay for the gate: the servers'
// schedulers start their shares of a run independently.
constexpr auto kReachTime = std::chrono::minutes(5);
constexpr auto kRetryPeriod = std::chrono::milliseconds(200);
// Connections still proving themselves; more are closed at once (a stranger's flood).
constexpr int kMaxUnproved = 64;

constexpr std::string_view kStoreRequest = "store";
constexpr std::string_view kRankRequest = "rank ";
constexpr std::string_view kMeshRequest = "mesh ";

std::string proof(const std::string& key, std::string_view role, const std::string& gate_challenge,
                  const std::string& relay_challenge) {
    std::string message(role);
    message += gate_challenge;
    message += relay_challenge;
    return hmac_sha256(key, message);
}

std::string length_bytes(std::size_t n) {
    std::string out(kLengthBytes, '\0');
    for (std::size_t i = 0; i < kLengthBytes; ++i)
        out[i] = static_cast<char>((n >> (8 * (kLengthBytes - 1 - i))) & 0xff);
    return out;
}

std::uint32_t read_length(std::string_view bytes) {
    std::uint32_t n = 0;
    for (std::size_t i = 0; i < kLengthBytes; ++i)
        n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    return n;
}

std::string endpoint_text(const tcp::endpoint& at) {
    return at.address().to_string() + ":" + std::to_string(at.port());
}

std::string endpoint_text(const tcp::socket& socket) {
    error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    return ec ? std::string("?") : endpoint_text(remote);
}

// A whole number of `text` from `min` to `max`, or nothing.
std::optional<int> whole_number(std::string_view text, int min, int max) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
        return std::nullopt;
    return value;
}

bool is_loopback_v4(const std::string& address) {
    error_code ec;
    const auto parsed = asio::ip::make_address_v4(address, ec);
    return !ec && parsed.is_loopback();
}

Json mesh_json(const std::vector<MeshRank>& ranks) {
    Json list = Json::array();
    for (const MeshRank& r : ranks)
        list.push_back({{"rank", r.rank},
                        {"address", r.address},
                        {"port", r.port},
                        {"gate", r.gate_host + ":" + std::to_string(r.gate_port)}});
    return list;
}

// A list of ranks as another launcher sent it; InputError for anything that is not one: a rank
// outside the world, an address off loopback (a proxy binds it), a port out of range.
std::vector<MeshRank> mesh_from_json(std::string_view text, int world_size) {
    const std::string where = "the ranks' table";
    const Json list = parse_json(text, where);
    if (!list.is_array()) throw InputError(where, "expected a list");
    std::vector<MeshRank> out;
    for (const Json& item : list) {
        if (!item.is_object()) throw InputError(where, "expected an object for each rank");
        MeshRank r;
        const long long rank = get_integer(item, "rank", where);
        if (rank < 0 || rank >= world_size)
            throw InputError(where, "rank " + std::to_string(rank) + " is outside a world of " +
                                        std::to_string(world_size));
        r.rank = static_cast<int>(rank);
        r.address = get_string(item, "address", where);
        if (!is_loopback_v4(r.address))
            throw InputError(where, "rank " + std::to_string(r.rank) + ": '" + r.address +
                                        "' is not a loopback address");
        const long long port = get_integer(item, "port", where);
        if (port < 1 || port > 65535) throw InputError(where, "a port out of range");
        r.port = static_cast<int>(port);
        const HostPort gate =
            parse_host_port(where + ": field 'gate'", get_string(item, "gate", where));
        r.gate_host = gate.host;
        r.gate_port = gate.port;
        out.push_back(std::move(r));
    }
    return out;
}

// What both ends share: the listening socket, its thread and the counts; at a gate, also what it
// passes connections on to.
struct Tunnel {
    std::atomic<int> refused{0}, passed{0}, unproved{0};
    std::string key;
    asio::io_context io;
    tcp::acceptor acceptor{io};
    asio::steady_timer accept_pause{io};
    std::thread thread;

    // A gate's targets: the store (port 0: not on this server), this server's ranks and, on rank
    // 0's server, the table being collected and the "mesh" requests that wait for it.
    int store_port = 0;
    int world_size = 0;
    std::mutex mutex;
    std::condition_variable table_changed;
    std::map<int, MeshRank> local, table;
    std::vector<std::function<void(const std::string&)>> waiting;

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
            throw Error("cannot listen for " + what + " at " + endpoint_text(at) + ": " +
                        ec.message());
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

    // The table in rank order (the caller holds `mutex`).
    std::vector<MeshRank> whole_table() const {
        std::vector<MeshRank> whole;
        for (const auto& [rank, r] : table)
            whole.push_back(r);
        return whole;
    }

    // Adds ranks to the table (rank 0's server); once it holds the whole world, answers every
    // waiting "mesh" request with it. InputError for a rank sent before with another address.
    void add_to_table(const std::vector<MeshRank>& ranks) {
        std::vector<std::function<void(const std::string&)>> answer;
        std::string text;
        {
            std::lock_guard lock(mutex);
            for (const MeshRank& r : ranks) {
                const auto [it, added] = table.emplace(r.rank, r);
                if (!added && (it->second.address != r.address || it->second.port != r.port))
                    throw InputError("the ranks' table",
                                     "rank " + std::to_string(r.rank) + " was sent twice");
            }
            if (static_cast<int>(table.size()) < world_size) return;
            text = mesh_json(whole_table()).dump();
            answer.swap(waiting);
        }
        table_changed.notify_all();
        for (auto& a : answer)
            asio::post(io, [a, text] { a(text); });
    }

    // The table's text now if it is whole; otherwise `then` gets it once it is.
    std::optional<std::string> table_or_wait(std::function<void(const std::string&)> then) {
        std::lock_guard lock(mutex);
        if (static_cast<int>(table.size()) >= world_size) {
            return mesh_json(whole_table()).dump();
        }
        waiting.push_back(std::move(then));
        return std::nullopt;
    }
};

// Carries bytes both ways between two sockets until either side closes.
class Pipe : public std::enable_shared_from_this<Pipe> {
  public:
    Pipe(tcp::socket a, tcp::socket b) : sockets_{std::move(a), std::move(b)} {
        // Gloo's small messages (a loss sum, a stop flag) go at once, as Gloo sends them on its
        // own sockets: without this, each hop may hold one back for the previous one's ACK.
        for (auto& socket : sockets_) {
            error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
        }
    }

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

// One connection at the gate: the proof, the request, then on to its target.
class GateSession : public std::enable_shared_from_this<GateSession> {
  public:
    GateSession(tcp::socket peer, Tunnel& tunnel)
        : peer_(std::move(peer)),
          target_(tunnel.io),
          timer_(tunnel.io),
          tunnel_(tunnel),
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
            if (ec) return;
            if (self->proved_) return self->close();  // proved, but no request
            self->refuse("no proof of the run's key within 10 s");
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
        out_ = proof(tunnel_.key, "gate", challenge_, relay_challenge);
        auto self = shared_from_this();
        asio::async_write(peer_, asio::buffer(out_), [self](const error_code& e, std::size_t) {
            if (e) return self->close();
            self->read_request();
        });
    }

    // Still under the 10 s of the proof: a proved party sends its request at once.
    void read_request() {
        auto self = shared_from_this();
        in_.assign(kLengthBytes, '\0');
        asio::async_read(peer_, asio::buffer(in_), [self](const error_code& ec, std::size_t) {
            if (ec) return self->close();
            const std::uint32_t length = read_length(self->in_);
            if (length == 0 || length > kMaxMessage)
                return self->decline("a request of " + std::to_string(length) + " bytes");
            self->in_.assign(length, '\0');
            asio::async_read(self->peer_, asio::buffer(self->in_),
                             [self](const error_code& e, std::size_t) {
                                 if (e) return self->close();
                                 self->timer_.cancel();
                                 self->serve(self->in_);
                             });
        });
    }

    void serve(const std::string& request) {
        const std::string_view r = request;
        if (r == kStoreRequest) {
            if (tunnel_.store_port == 0) return decline("the run's store is not on this server");
            target_at_ = tcp::endpoint(asio::ip::address_v4::loopback(),
                                       static_cast<unsigned short>(tunnel_.store_port));
            target_name_ = "the store";
        } else if (r.substr(0, kRankRequest.size()) == kRankRequest) {
            const auto rank = whole_number(r.substr(kRankRequest.size()), 0, 1 << 20);
            std::optional<MeshRank> found;
            if (rank) {
                std::lock_guard lock(tunnel_.mutex);
                if (const auto it = tunnel_.local.find(*rank); it != tunnel_.local.end())
                    found = it->second;
            }
            if (!found)
                return decline("'" + std::string(r.substr(0, 32)) +
                               "': no such rank on this server");
            error_code ec;
            target_at_ = tcp::endpoint(asio::ip::make_address_v4(found->address, ec),
                                       static_cast<unsigned short>(found->port));
            target_name_ = "rank " + std::to_string(*rank);
        } else if (r.substr(0, kMeshRequest.size()) == kMeshRequest && tunnel_.world_size > 0) {
            return take_mesh(r.substr(kMeshRequest.size()));
        } else {
            return decline("an unknown request");
        }
        deadline_ = Clock::now() + kReachTime;
        reach_target();
    }

    void take_mesh(std::string_view text) {
        try {
            tunnel_.add_to_table(mesh_from_json(text, tunnel_.world_size));
        } catch (const std::exception& e) {
            return decline(e.what());
        }
        auto self = shared_from_this();
        const auto answer_with = [self](const std::string& table) {
            self->answer('+', table, [self] { self->close(); });
        };
        if (const auto table = tunnel_.table_or_wait(answer_with)) answer_with(*table);
    }

    void reach_target() {
        auto self = shared_from_this();
        target_.async_connect(target_at_, [self](const error_code& ec) {
            if (!ec) {
                self->answer('+', "ok", [self] {
                    ++self->tunnel_.passed;
                    std::make_shared<Pipe>(std::move(self->peer_), std::move(self->target_))
                        ->start();
                });
                return;
            }
            if (Clock::now() >= self->deadline_) {
                spdlog::warn("rendezvous: {} at {} did not open within {} s", self->target_name_,
                             endpoint_text(self->target_at_),
                             std::chrono::duration_cast<std::chrono::seconds>(kReachTime).count());
                return self->decline(self->target_name_ + " did not open");
            }
            error_code ignored;
            self->target_.close(ignored);
            self->timer_.expires_after(kRetryPeriod);
            self->timer_.async_wait([self](const error_code& e) {
                if (!e) self->reach_target();
            });
        });
    }

    void answer(char status, const std::string& text, std::function<void()> then) {
        out_ = std::string(1, status) + length_bytes(text.size()) + text;
        auto self = shared_from_this();
        asio::async_write(peer_, asio::buffer(out_),
                          [self, then](const error_code& e, std::size_t) {
                              if (e) return self->close();
                              then();
                          });
    }

    // A proved party's request that the gate does not serve: it says why, and closes.
    void decline(const std::string& why) {
        ++tunnel_.refused;
        spdlog::warn("rendezvous: declined {}: {}", from_, why);
        auto self = shared_from_this();
        answer('-', why, [self] { self->close(); });
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
        target_.close(ignored);
    }

    tcp::socket peer_, target_;
    asio::steady_timer timer_;
    Tunnel& tunnel_;
    std::string from_, challenge_, out_, in_, target_name_;
    tcp::endpoint target_at_;
    Clock::time_point deadline_;
    bool proved_ = false, closed_ = false;
};

// One connection to a gate: the proof, the request, then `on_ok` with the gate's socket and its
// answer, or `on_fail` with why not. Retries while the gate is not up, until `deadline`.
class Dialer : public std::enable_shared_from_this<Dialer> {
  public:
    using OnOk = std::function<void(tcp::socket gate, const std::string& answer)>;
    // `refused`: the gate was reached and said no (or failed the proof); otherwise it was
    // not reached in time.
    using OnFail = std::function<void(const std::string& why, bool refused)>;

    Dialer(Tunnel& tunnel, tcp::endpoint gate, std::string request, Clock::time_point deadline,
           OnOk on_ok, OnFail on_fail)
        : gate_(tunnel.io),
          timer_(tunnel.io),
          tunnel_(tunnel),
          gate_at_(gate),
          request_(std::move(request)),
          deadline_(deadline),
          on_ok_(std::move(on_ok)),
          on_fail_(std::move(on_fail)) {}

    void start() { connect(); }

  private:
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
            const std::string text =
                "the gate at " + endpoint_text(gate_at_) + " did not let us in in time: " + why;
            spdlog::warn("rendezvous: {}", text);
            return fail(text, false);
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
                return self->refuse("not a Crucible rendezvous gate of this version");
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
            self->out_ = length_bytes(self->request_.size()) + self->request_;
            asio::async_write(self->gate_, asio::buffer(self->out_),
                              [self](const error_code& e, std::size_t) {
                                  if (e) return self->refuse("closed before the request");
                                  self->read_answer();
                              });
        });
    }

    // The gate answers once its target is reached: a store or a rank at once, the table when
    // the last server has sent its ranks (no time limit here: the ranks' own bounds the wait).
    void read_answer() {
        auto self = shared_from_this();
        in_.assign(1 + kLengthBytes, '\0');
        asio::async_read(gate_, asio::buffer(in_), [self](const error_code& ec, std::size_t) {
            if (ec) return self->refuse("it closed the connection before answering");
            const char status = self->in_[0];
            const std::uint32_t length = read_length(std::string_view(self->in_).substr(1));
            if ((status != '+' && status != '-') || length > kMaxMessage)
                return self->refuse("not an answer");
            self->in_.assign(length, '\0');
            asio::async_read(self->gate_, asio::buffer(self->in_),
                             [self, status](const error_code& e, std::size_t) {
                                 if (e) return self->refuse("closed while answering");
                                 if (status == '-')
                                     return self->refuse("it declined: " + self->in_);
                                 self->done_ = true;
                                 self->on_ok_(std::move(self->gate_), self->in_);
                             });
        });
    }

    void refuse(const std::string& why) {
        if (done_) return;
        ++tunnel_.refused;
        const std::string text = "the gate at " + endpoint_text(gate_at_) + " was refused: " + why;
        spdlog::warn("rendezvous: {}", text);
        fail(text, true);
    }

    void fail(const std::string& why, bool refused) {
        if (done_) return;
        done_ = true;
        error_code ignored;
        timer_.cancel();
        gate_.close(ignored);
        on_fail_(why, refused);
    }

    tcp::socket gate_;
    asio::steady_timer timer_;
    Tunnel& tunnel_;
    tcp::endpoint gate_at_;
    std::string request_;
    Clock::time_point deadline_;
    OnOk on_ok_;
    OnFail on_fail_;
    std::string gate_challenge_, challenge_, out_, in_;
    bool done_ = false;
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

std::string mesh_rank_address(const std::string& key, int rank) {
    // The key is hex (ServerShare::from_json checks it); its first byte picks the run's net.
    int net = 0;
    if (key.size() >= 2) std::from_chars(key.data(), key.data() + 2, net, 16);
    const int host = rank + 1;
    return "127." + std::to_string(1 + net % 254) + "." + std::to_string((host >> 8) & 0xff) + "." +
           std::to_string(host & 0xff);
}

struct RendezvousGate::State : Tunnel {};

RendezvousGate::RendezvousGate(const std::string& host, int port, int store_port,
                               const std::string& key, int world_size)
    : state_(std::make_unique<State>()) {
    state_->key = key;
    state_->store_port = store_port;
    state_->world_size = store_port > 0 ? world_size : 0;
    state_->listen(resolve(host, port, "the cluster address"), "the run's other servers");
    Tunnel& tunnel = *state_;
    state_->start([&tunnel](tcp::socket socket) {
        if (tunnel.unproved >= kMaxUnproved) {
            ++tunnel.refused;
            return;  // closed as it goes out of scope
        }
        std::make_shared<GateSession>(std::move(socket), tunnel)->start();
    });
}

RendezvousGate::~RendezvousGate() {
    state_->stop();
}

void RendezvousGate::set_local_ranks(const std::vector<MeshRank>& ranks) {
    {
        std::lock_guard lock(state_->mutex);
        for (const MeshRank& r : ranks)
            state_->local[r.rank] = r;
    }
    if (state_->world_size > 0) state_->add_to_table(ranks);
}

std::vector<MeshRank> RendezvousGate::mesh_table(const StopCheck& stop) {
    std::unique_lock lock(state_->mutex);
    while (static_cast<int>(state_->table.size()) < state_->world_size) {
        if (stop && stop()) throw Error("stopped while the other servers' ranks were awaited");
        state_->table_changed.wait_for(lock, std::chrono::milliseconds(100));
    }
    return state_->whole_table();
}

int RendezvousGate::refused() const {
    return state_->refused;
}
int RendezvousGate::passed() const {
    return state_->passed;
}

struct RendezvousRelay::State : Tunnel {};

RendezvousRelay::RendezvousRelay(const std::string& gate_host, int gate_port,
                                 const std::string& key, const std::string& request)
    : RendezvousRelay("127.0.0.1", 0, gate_host, gate_port, key, request) {}

RendezvousRelay::RendezvousRelay(const std::string& listen_address, int listen_port,
                                 const std::string& gate_host, int gate_port,
                                 const std::string& key, const std::string& request)
    : state_(std::make_unique<State>()) {
    state_->key = key;
    const tcp::endpoint gate = resolve(gate_host, gate_port, "the gate of the run's server");
    error_code ec;
    const auto address = asio::ip::make_address_v4(listen_address, ec);
    if (ec || !address.is_loopback())
        throw Error("a relay listens on loopback only, not on '" + listen_address + "'");
    state_->listen(tcp::endpoint(address, static_cast<unsigned short>(listen_port)),
                   "this server's ranks");
    Tunnel& tunnel = *state_;
    state_->start([&tunnel, gate, request](tcp::socket socket) {
        auto rank = std::make_shared<tcp::socket>(std::move(socket));
        std::make_shared<Dialer>(
            tunnel, gate, request, Clock::now() + kReachTime,
            [&tunnel, rank](tcp::socket gate_socket, const std::string&) {
                ++tunnel.passed;
                std::make_shared<Pipe>(std::move(*rank), std::move(gate_socket))->start();
            },
            [rank](const std::string&, bool) {
                error_code ignored;
                rank->close(ignored);
            })
            ->start();
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

std::vector<MeshRank> exchange_mesh_table(const std::string& gate_host, int gate_port,
                                          const std::string& key, int world_size,
                                          const std::vector<MeshRank>& ours,
                                          const StopCheck& stop) {
    Tunnel tunnel;
    tunnel.key = key;
    const tcp::endpoint gate = resolve(gate_host, gate_port, "the run's first server");
    std::optional<std::string> table, failure;
    // The first server may start its share long after this one (its own queue): the request
    // is tried again until the ranks' own time runs out and the launcher stops it.
    std::function<void()> dial = [&] {
        std::make_shared<Dialer>(
            tunnel, gate, std::string(kMeshRequest) + mesh_json(ours).dump(),
            Clock::now() + kReachTime,
            [&](tcp::socket, const std::string& answer) { table = answer; },
            [&](const std::string& why, bool refused) {
                if (refused)
                    failure = why;
                else
                    dial();
            })
            ->start();
    };
    dial();
    while (!table && !failure) {
        if (stop && stop()) throw Error("stopped while the other servers' ranks were awaited");
        tunnel.io.run_for(std::chrono::milliseconds(100));
        if (tunnel.io.stopped()) tunnel.io.restart();
    }
    if (failure) throw Error(*failure);
    std::vector<MeshRank> whole = mesh_from_json(*table, world_size);
    std::vector<bool> seen(static_cast<std::size_t>(world_size), false);
    for (const MeshRank& r : whole) {
        if (seen[static_cast<std::size_t>(r.rank)])
            throw Error("the first server's table names rank " + std::to_string(r.rank) + " twice");
        seen[static_cast<std::size_t>(r.rank)] = true;
    }
    if (static_cast<int>(whole.size()) != world_size)
        throw Error("the first server's table lacks ranks of the world");
    return whole;
}

}  // namespace crucible::jobs
