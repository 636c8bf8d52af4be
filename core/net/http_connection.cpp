#include "core/net/http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <functional>
#include <future>
#include <optional>
#include <string_view>
#include <type_traits>

#include "core/net/http_range.h"

namespace crucible::net::detail {

bool ServerShared::admit_connection(const std::string& address) {
    std::lock_guard lock(mutex_);
    auto& mine = per_address_[address];
    if (open_ >= max_connections || mine >= options.max_connections_per_address) {
        if (mine == 0) per_address_.erase(address);
        return false;
    }
    ++open_;
    ++mine;
    return true;
}

void ServerShared::release_connection(const std::string& address) {
    std::lock_guard lock(mutex_);
    --open_;
    auto it = per_address_.find(address);
    if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
}

std::size_t ServerShared::open_connections() const {
    std::lock_guard lock(mutex_);
    return open_;
}

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = beast::error_code;
using Clock = std::chrono::steady_clock;

// The first read of a request takes what is there up to this much; the head's reader goes on.
constexpr std::size_t kFirstRead = 2048;
// A connection closed with request bytes unread (a refused body, a head over the limits) first
// reads and drops what the client still sends for this long, so that the client reads the
// answer instead of a reset; the bytes go through the connection's small buffer.
constexpr auto kLingerTime = std::chrono::seconds(2);
// Buffers bigger than this are given back when a request is over.
constexpr std::size_t kKeepBuffer = 16u << 10;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// %XX decoding as cpp-httplib does it (a '%' without two hex digits stays as it is); '+' is a
// space in a query only.
std::string decode_url(std::string_view s, bool plus_is_space) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out += static_cast<char>(hi * 16 + lo);
                i += 2;
                continue;
            }
        }
        out += (plus_is_space && s[i] == '+') ? ' ' : s[i];
    }
    return out;
}

void parse_query(std::string_view query, httplib::Params& params) {
    while (!query.empty()) {
        const std::size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        if (!pair.empty()) {
            const std::size_t eq = pair.find('=');
            params.emplace(decode_url(pair.substr(0, eq), true),
                           eq == std::string_view::npos ? std::string()
                                                        : decode_url(pair.substr(eq + 1), true));
        }
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
    }
}

// The status line and fields of an answer. `length` empty: no Content-Length (chunked or closed
// at the end).
std::string response_head(const httplib::Response& res, std::optional<std::uint64_t> length,
                          bool chunked, bool close, bool http10) {
    std::string out = "HTTP/1.1 ";
    out += std::to_string(res.status);
    out += ' ';
    const auto reason =
        bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(res.status)));
    out.append(reason.data(), reason.size());
    out += "\r\n";
    for (const auto& [name, value] : res.headers) {
        if (equals_ignoring_case(name, "Content-Length") ||
            equals_ignoring_case(name, "Transfer-Encoding") ||
            equals_ignoring_case(name, "Connection"))
            continue;
        if (name.find_first_of("\r\n") != std::string::npos ||
            value.find_first_of("\r\n") != std::string::npos)
            continue;
        out += name;
        out += ": ";
        out += value;
        out += "\r\n";
    }
    if (length) {
        out += "Content-Length: ";
        out += std::to_string(*length);
        out += "\r\n";
    }
    if (chunked) out += "Transfer-Encoding: chunked\r\n";
    if (close)
        out += "Connection: close\r\n";
    else if (http10)
        out += "Connection: keep-alive\r\n";
    out += "\r\n";
    return out;
}

// Errors of the HTTP parser (a malformed or over-limit request), as opposed to the socket's.
bool is_parse_error(const error_code& ec) {
    return ec.category() == bhttp::make_error_code(bhttp::error::need_more).category() &&
           ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

enum class Body {
    None,       // the request has none
    Pending,    // not read (yet)
    Reading,    // being read
    Read,       // all read
    Abandoned,  // partly read, refused or cut off
};

template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
    static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  public:
    Connection(Stream stream, std::shared_ptr<ServerShared> shared, Peer peer)
        : stream_(std::move(stream)),
          shared_(std::move(shared)),
          peer_(std::move(peer)),
          timer_(stream_.get_executor()),
          buffer_(std::max<std::size_t>(shared_->options.max_header_bytes, 64u << 10) +
                  (4u << 10)) {}

    ~Connection() { shared_->release_connection(peer_.address); }

    void start() {
        head_deadline_ = Clock::now() + shared_->options.head_timeout;
        if constexpr (kTls) {
            lowest().expires_at(head_deadline_);
            stream_.async_handshake(asio::ssl::stream_base::server,
                                    [self = this->shared_from_this()](error_code ec) {
                                        if (ec) return self->close();
                                        self->wait_for_request();
                                    });
        } else {
            wait_for_request();
        }
    }

  private:
    beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

    template <typename F>
    void on_pool(F&& f) {
        asio::post(*shared_->pool, [self = this->shared_from_this(), f = std::forward<F>(f)] {
            try {
                f();
            } catch (...) {
                // Only a bug ends here (the app turns handler failures into answers): the
                // client is cut off rather than left waiting.
                asio::post(self->stream_.get_executor(), [self] { self->close(); });
            }
        });
    }

    template <typename F>
    void on_strand(F&& f) {
        asio::post(stream_.get_executor(), std::forward<F>(f));
    }

    // --- Reading a request ---------------------------------------------------------------

    void wait_for_request() {
        if (closed_ || shared_->stopping) return close();
        parser_.emplace(shared_->limits);
        exchange_ = std::make_unique<Exchange>();
        body_ = Body::None;
        continue_sent_ = false;
        if (buffer_.size() > 0) {  // pipelined: the next request is here already
            if (!first_request_) head_deadline_ = Clock::now() + shared_->options.head_timeout;
            return read_head();
        }
        if (first_request_)
            lowest().expires_at(head_deadline_);
        else
            lowest().expires_after(shared_->options.idle_timeout);
        stream_.async_read_some(buffer_.prepare(kFirstRead), [self = this->shared_from_this()](
                                                                 error_code ec, std::size_t n) {
            if (ec) return self->close();
            self->buffer_.commit(n);
            if (!self->first_request_)
                self->head_deadline_ = Clock::now() + self->shared_->options.head_timeout;
            self->read_head();
        });
    }

    void read_head() {
        lowest().expires_at(head_deadline_);
        bhttp::async_read_header(
            stream_, buffer_, *parser_,
            [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_head(ec); });
    }

    void on_head(error_code ec) {
        lowest().expires_never();
        first_request_ = false;
        if (ec) {
            // Gone, timed out (a slow sender) or a socket error: closed without an answer.
            if (!is_parse_error(ec)) return close();
            return refuse(parser_->refusal_status(ec));
        }
        if (!fill_request()) return refuse(400);
        body_ = parser_->is_done() ? Body::None : Body::Pending;
        keep_alive_ = parser_->keep_alive();
        on_pool([this] { admit(); });
    }

    bool fill_request() {
        auto& head = parser_->head();
        auto& req = exchange_->req;
        req.method = head.method;
        req.target = head.target;
        req.version = head.version == 10 ? "HTTP/1.0" : "HTTP/1.1";
        for (auto& [name, value] : head.fields)
            req.headers.emplace(std::move(name), std::move(value));
        head.fields.clear();
        const std::string_view target = req.target;
        if (target.empty() || target.front() != '/') return false;  // origin-form only
        const std::size_t q = target.find('?');
        req.path = decode_url(target.substr(0, q), false);
        // A decoded NUL would cut a file name short where the route checked the whole.
        if (req.path.find('\0') != std::string::npos) return false;
        if (q != std::string_view::npos) parse_query(target.substr(q + 1), req.params);
        req.remote_addr = peer_.address;
        req.remote_port = peer_.port;
        req.local_addr = peer_.local_address;
        req.local_port = peer_.local_port;
        return true;
    }

    // An answer to a request that goes no further (a head over the limits, a bad request):
    // the connection closes after it.
    void refuse(int status) {
        auto& res = exchange_->res;
        res = httplib::Response();
        if (status == 431)
            send_error(res, 431, "header_too_large",
                       "request head over the agent's limits (" +
                           std::to_string(shared_->options.max_header_bytes >> 10) + " KB, " +
                           std::to_string(shared_->options.max_header_count) + " fields)");
        else if (status == 414)
            send_error(res, 414, "target_too_long", "request target over the agent's limit");
        else if (status == 413)
            send_error(res, 413, "too_large", "request body over the agent's limit");
        else
            send_error(res, 400, "bad_request", "malformed HTTP request");
        body_ = Body::Abandoned;
        close_after_ = true;
        head_only_ = false;
        head_ = response_head(res, res.body.size(), false, true, false);
        write_whole();
    }

    // --- On the handler pool ---------------------------------------------------------------

    void admit() {
        head_only_ = exchange_->req.method == "HEAD";
        switch (shared_->app->admit(*exchange_)) {
            case Admission::Respond:
                return respond();
            case Admission::HandleWithReader: {
                httplib::ContentReader reader(
                    [this](httplib::ContentReceiver receiver) {
                        return read_body_blocking(std::move(receiver));
                    },
                    [](httplib::MultipartContentHeader, httplib::ContentReceiver) {
                        return false;  // no route takes multipart bodies
                    });
                shared_->app->handle(*exchange_, &reader);
                return respond();
            }
            case Admission::ReadBodyThenHandle:
                if (body_ == Body::None) {
                    shared_->app->handle(*exchange_, nullptr);
                    return respond();
                }
                if (over_limit_announced()) return respond();
                on_strand([self = this->shared_from_this()] { self->read_body(); });
                return;
        }
    }

    // A Content-Length over the payload limit is refused before a byte of the body is read.
    bool over_limit_announced() {
        const auto length = parser_->content_length();
        if (!length || *length <= shared_->options.payload_limit) return false;
        exchange_->body_too_large = true;
        return true;
    }

    // The route's ContentReader: the handler's pool thread waits for each piece while the
    // strand reads it (under read_timeout), so the body never sits in memory whole.
    bool read_body_blocking(httplib::ContentReceiver receiver) {
        if (body_ == Body::None) return true;
        if (body_ != Body::Pending) return body_ == Body::Read;
        if (over_limit_announced()) return false;
        body_ = Body::Reading;
        parser_->body_into(&piece_);
        for (bool first = true;; first = false) {
            auto done = std::make_shared<std::promise<error_code>>();
            auto result = done->get_future();
            on_strand([self = this->shared_from_this(), done, first] {
                auto read = [self, done] {
                    if (self->closed_) return done->set_value(asio::error::operation_aborted);
                    self->lowest().expires_after(self->shared_->options.read_timeout);
                    bhttp::async_read_some(
                        self->stream_, self->buffer_, *self->parser_,
                        [self, done](error_code ec, std::size_t) { done->set_value(ec); });
                };
                if (first)
                    self->send_continue_then(read);
                else
                    read();
            });
            while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready)
                if (shared_->stopping) {
                    body_ = Body::Abandoned;
                    return false;
                }
            const error_code ec = result.get();
            std::string piece;
            piece.swap(piece_);
            if (!piece.empty() && !receiver(piece.data(), piece.size())) {
                body_ = Body::Abandoned;
                return false;
            }
            if (ec) {
                body_ = Body::Abandoned;
                if (parser_->body_too_large()) exchange_->body_too_large = true;
                return false;
            }
            if (parser_->is_done()) {
                body_ = Body::Read;
                return true;
            }
        }
    }

    // Prepares the answer and hands it to the strand for writing.
    void respond() {
        shared_->app->finish(*exchange_);
        auto& req = exchange_->req;
        auto& res = exchange_->res;
        const bool http10 = req.version == "HTTP/1.0";
        close_after_ = !keep_alive_ || body_ == Body::Pending || body_ == Body::Reading ||
                       body_ == Body::Abandoned || shared_->stopping ||
                       equals_ignoring_case(res.get_header_value("Connection"), "close");
        const bool bodyless = res.status < 200 || res.status == 204 || res.status == 304;
        streaming_ = Streaming::None;
        // A provider without a length that is not chunked is taken for a sized one of 0 bytes
        // (httplib sets it so for an empty file); no route streams an answer that way.
        if (res.content_provider_ && !head_only_ && !bodyless &&
            (res.is_chunked_content_provider_ || res.content_length_ > 0)) {
            if (res.is_chunked_content_provider_) {
                // SSE and other answers of unknown length: chunked (HTTP/1.0: until the close).
                streaming_ = http10 ? Streaming::UntilClose : Streaming::Chunked;
                if (http10) close_after_ = true;
                offset_ = 0;
                stream_done_ = false;
                head_ = response_head(res, std::nullopt, !http10, close_after_, http10);
                return on_strand([self = this->shared_from_this()] { self->start_stream(); });
            }
            streaming_ = Streaming::Sized;
            apply_range();
            if (streaming_ == Streaming::Sized) {
                head_ = response_head(res, remaining_, false, close_after_, http10);
                return on_strand([self = this->shared_from_this()] { self->start_stream(); });
            }
        }
        std::optional<std::uint64_t> length;
        if (!bodyless) length = res.content_provider_ ? res.content_length_ : res.body.size();
        head_ = response_head(res, length, false, close_after_, http10);
        on_strand([self = this->shared_from_this()] { self->write_whole(); });
    }

    // A sized answer (a download) and the request's Range: one range gives 206, a list of
    // them or one outside the file 416; If-Range with another ETag gives the whole file.
    void apply_range() {
        auto& req = exchange_->req;
        auto& res = exchange_->res;
        const std::uint64_t size = res.content_length_;
        offset_ = 0;
        remaining_ = size;
        if (res.status != 200 || req.method != "GET" || !req.has_header("Range")) return;
        if (req.has_header("If-Range")) {
            const std::string etag = res.get_header_value("ETag");
            if (etag.empty() || etag.rfind("W/", 0) == 0 ||
                req.get_header_value("If-Range") != etag)
                return;
        }
        const auto range = parse_byte_range(req.get_header_value("Range"), size);
        using Kind = ByteRangeRequest::Kind;
        if (range.kind == Kind::Whole) return;
        if (range.kind == Kind::Partial) {
            res.status = 206;
            res.set_header("Content-Range", "bytes " + std::to_string(range.begin) + "-" +
                                                std::to_string(range.end - 1) + "/" +
                                                std::to_string(size));
            offset_ = range.begin;
            remaining_ = range.end - range.begin;
            return;
        }
        streaming_ = Streaming::None;
        res.content_provider_ = nullptr;
        res.content_length_ = 0;
        res.headers.erase("Content-Type");
        res.set_header("Content-Range", "bytes */" + std::to_string(size));
        send_error(res, 416, "range_not_satisfiable",
                   range.kind == Kind::TooMany
                       ? "one byte range per request"
                       : "the range is outside the " + std::to_string(size) + " bytes");
    }

    // One call of a streamed answer's provider, on the pool; what it wrote goes to the strand.
    void pump() {
        auto& res = exchange_->res;
        stream_out_.clear();
        httplib::DataSink sink;
        const bool sized = streaming_ == Streaming::Sized;
        sink.write = [this, sized](const char* data, std::size_t n) {
            if (closed_) return false;
            // A sized answer never gets more than its length, whatever the provider writes.
            if (sized) n = std::min<std::uint64_t>(n, remaining_ - stream_out_.size());
            stream_out_.append(data, n);
            return true;
        };
        sink.done = [this] { stream_done_ = true; };
        sink.is_writable = [this] { return !closed_; };
        bool ok = false;
        try {
            const std::size_t want = sized ? static_cast<std::size_t>(std::min<std::uint64_t>(
                                                 remaining_, shared_->options.download_slice))
                                           : 0;
            ok = res.content_provider_(static_cast<std::size_t>(offset_), want, sink);
        } catch (...) {
            ok = false;
        }
        on_strand([self = this->shared_from_this(), ok] { self->after_pump(ok); });
    }

    // --- Writing an answer (on the strand) -------------------------------------------------

    void write_whole() {
        if (closed_) return;
        lowest().expires_after(shared_->options.write_timeout);
        const std::string& body = exchange_->res.body;
        const bool with_body = !head_only_ && !exchange_->res.content_provider_;
        if constexpr (kTls) {
            // One buffer over TLS: Beast's TLS stream sent the head of a two-buffer answer and
            // then closed without the body once the body passed 16 KB (GET /v1/info, 33 KB).
            if (with_body) head_ += body;
        }
        std::array<asio::const_buffer, 2> buffers{
            asio::buffer(head_), with_body && !kTls ? asio::buffer(body) : asio::const_buffer()};
        asio::async_write(stream_, buffers,
                          [self = this->shared_from_this()](error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->request_done();
                          });
    }

    void start_stream() {
        if (closed_) return;
        lowest().expires_after(shared_->options.write_timeout);
        asio::async_write(stream_, asio::buffer(head_),
                          [self = this->shared_from_this()](error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->on_pool([self] { self->pump(); });
                          });
    }

    void after_pump(bool ok) {
        if (closed_) return;
        // A provider that fails ends the answer short; for a chunked one the missing last
        // chunk tells the client (an SSE client reconnects with Last-Event-ID).
        if (!ok) return close();
        const std::size_t n = stream_out_.size();
        if (streaming_ == Streaming::Sized) {
            if (n == 0) return close();  // nothing more to give: the file shrank
            remaining_ -= n;
            offset_ += n;
            lowest().expires_after(shared_->options.write_timeout);
            asio::async_write(stream_, asio::buffer(stream_out_),
                              [self = this->shared_from_this()](error_code ec, std::size_t) {
                                  if (ec) return self->close();
                                  if (self->remaining_ == 0) return self->request_done();
                                  self->on_pool([self] { self->pump(); });
                              });
            return;
        }
        offset_ += n;
        if (n == 0 && !stream_done_) return poll_later(shared_->options.stream_poll);
        chunk_head_.clear();
        chunk_tail_.clear();
        if (streaming_ == Streaming::Chunked) {
            if (n > 0) {
                std::array<char, 20> hex{};
                auto end = std::to_chars(hex.data(), hex.data() + hex.size(), n, 16).ptr;
                chunk_head_.assign(hex.data(), end);
                chunk_head_ += "\r\n";
                chunk_tail_ = "\r\n";
            }
            if (stream_done_) chunk_tail_ += "0\r\n\r\n";
        }
        std::array<asio::const_buffer, 3> buffers{
            asio::buffer(chunk_head_), asio::buffer(stream_out_), asio::buffer(chunk_tail_)};
        lowest().expires_after(shared_->options.write_timeout);
        asio::async_write(stream_, buffers,
                          [self = this->shared_from_this(), n](error_code ec, std::size_t) {
                              if (ec) return self->close();
                              if (self->stream_done_) return self->request_done();
                              if (n < self->shared_->options.stream_batch_bytes)
                                  return self->poll_later(self->shared_->options.stream_gather);
                              self->on_pool([self] { self->pump(); });
                          });
    }

    void poll_later(std::chrono::milliseconds delay) {
        if (shared_->stopping) return close();
        timer_.expires_after(delay);
        timer_.async_wait([self = this->shared_from_this()](error_code ec) {
            if (ec || self->closed_) return;
            // A client that went away is let go now, not at the stream's next write (an idle
            // event stream writes every 15 s).
            if (self->peer_gone()) return self->close();
            self->on_pool([self] { self->pump(); });
        });
    }

    // True when the client has closed or reset the connection (a look without reading: what
    // it sent stays for the next request).
    bool peer_gone() {
        auto& socket = lowest().socket();
        error_code ec;
        socket.non_blocking(true, ec);  // for this look only; async operations are unaffected
        char byte = 0;
        socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
        return ec && ec != asio::error::would_block && ec != asio::error::try_again;
    }

    void send_continue_then(std::function<void()> next) {
        const auto& req = exchange_->req;
        if (continue_sent_ || req.version != "HTTP/1.1" ||
            !equals_ignoring_case(req.get_header_value("Expect"), "100-continue"))
            return next();
        continue_sent_ = true;
        lowest().expires_after(shared_->options.write_timeout);
        asio::async_write(
            stream_, asio::buffer(kContinue.data(), kContinue.size()),
            [self = this->shared_from_this(), next = std::move(next)](error_code ec, std::size_t) {
                if (ec) return self->close();
                next();
            });
    }

    // The body of a route that takes it whole, into req.body (capped by the parser).
    void read_body() {
        if (closed_) return;
        body_ = Body::Reading;
        parser_->body_into(&exchange_->req.body);
        send_continue_then([self = this->shared_from_this()] { self->read_body_some(); });
    }

    void read_body_some() {
        lowest().expires_after(shared_->options.read_timeout);
        bhttp::async_read_some(
            stream_, buffer_, *parser_,
            [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_body(ec); });
    }

    void on_body(error_code ec) {
        if (ec) {
            body_ = Body::Abandoned;
            if (parser_->body_too_large()) {
                exchange_->body_too_large = true;
                return on_pool([this] { respond(); });
            }
            if (!is_parse_error(ec)) return close();
            return refuse(400);  // broken chunked framing
        }
        if (!parser_->is_done()) return read_body_some();
        body_ = Body::Read;
        lowest().expires_never();
        on_pool([this] {
            shared_->app->handle(*exchange_, nullptr);
            respond();
        });
    }

    void request_done() {
        if (closed_) return;
        const bool unread =
            body_ == Body::Pending || body_ == Body::Reading || body_ == Body::Abandoned;
        exchange_.reset();  // the request's memory (and a provider's resources) go now
        parser_.reset();
        if (close_after_) return unread ? linger() : close();
        if (stream_out_.capacity() > kKeepBuffer) std::string().swap(stream_out_);
        if (buffer_.size() == 0 && buffer_.capacity() > kKeepBuffer) buffer_.shrink_to_fit();
        wait_for_request();
    }

    // Closes after reading and dropping what the client still sends, for kLingerTime at most.
    void linger() {
        error_code ec;
        lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
        if (ec) return close();
        buffer_.clear();
        buffer_.shrink_to_fit();
        linger_deadline_ = Clock::now() + kLingerTime;
        drain();
    }

    void drain() {
        lowest().expires_at(linger_deadline_);
        lowest().async_read_some(buffer_.prepare(4096),
                                 [self = this->shared_from_this()](error_code ec, std::size_t) {
                                     if (ec) return self->close();
                                     self->drain();
                                 });
    }

    void close() {
        if (closed_.exchange(true)) return;
        timer_.cancel();
        error_code ec;
        lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
        lowest().close();
    }

    enum class Streaming { None, Sized, Chunked, UntilClose };

    Stream stream_;
    std::shared_ptr<ServerShared> shared_;
    Peer peer_;
    asio::steady_timer timer_;
    beast::flat_buffer buffer_;
    Clock::time_point head_deadline_;
    Clock::time_point linger_deadline_;
    bool first_request_ = true;
    std::atomic<bool> closed_{false};

    // The request under way; handed between the strand and the pool by posting.
    std::optional<RequestParser> parser_;
    std::unique_ptr<Exchange> exchange_;
    Body body_ = Body::None;
    bool keep_alive_ = false;
    bool close_after_ = false;
    bool head_only_ = false;
    bool continue_sent_ = false;
    std::string piece_;  // a piece of an upload's body, from the strand to the handler
    std::string head_;   // the answer's status line and fields
    Streaming streaming_ = Streaming::None;
    std::uint64_t offset_ = 0;     // bytes of the content given so far (from the range's start)
    std::uint64_t remaining_ = 0;  // sized answers: bytes still to send
    bool stream_done_ = false;     // the provider called done()
    std::string stream_out_;       // what the provider wrote in its last call
    std::string chunk_head_, chunk_tail_;
};

}  // namespace

void serve_connection(tcp::socket socket, std::shared_ptr<ServerShared> shared, Peer peer) {
    if (shared->tls) {
        using Tls = beast::ssl_stream<beast::tcp_stream>;
        auto& context = *shared->tls;
        std::make_shared<Connection<Tls>>(Tls(std::move(socket), context), std::move(shared),
                                          std::move(peer))
            ->start();
    } else {
        std::make_shared<Connection<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                        std::move(shared), std::move(peer))
            ->start();
    }
}

}  // namespace crucible::net::detail
