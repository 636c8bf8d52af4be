#pragma once
// The agent server's HTTP/1.1 request parser: Boost.Beast's parser held to the agent's limits.
// The head is bounded in bytes, in fields and in target length; the body is bounded however it
// is framed (Content-Length or chunked, trailers included). It fills a plain RequestHead and
// appends body bytes to a string the reader names, and does no I/O itself: the connection
// (http_connection.cpp) feeds it from the socket and the fuzz target
// (tests/fuzz/project/fuzz_http_request.cpp) feeds it bytes. It knows nothing of routes,
// tokens or httplib.
#include <boost/beast/http/basic_parser.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace crucible::net {

struct RequestLimits {
    std::uint32_t header_bytes = 16u << 10;  // request line + fields
    std::size_t header_count = 100;          // fields, trailers included
    std::size_t target_bytes = 8u << 10;     // path and query
    std::uint64_t body_bytes = 64u << 20;    // whatever the framing
};

// A request line and its fields as received (names keep their case).
struct RequestHead {
    std::string method;
    std::string target;
    int version = 11;  // 10 = HTTP/1.0, 11 = HTTP/1.1
    std::vector<std::pair<std::string, std::string>> fields;
};

class RequestParser : public boost::beast::http::basic_parser<true> {
  public:
    using error_code = boost::beast::error_code;

    explicit RequestParser(const RequestLimits& limits);

    const RequestHead& head() const { return head_; }
    RequestHead& head() { return head_; }
    // Where body bytes go from now on (appended); null drops them.
    void body_into(std::string* out) { body_out_ = out; }
    std::uint64_t body_received() const { return body_received_; }
    // True when the body was refused for its size (Content-Length or chunks over the limit).
    bool body_too_large() const { return body_too_large_; }
    // The HTTP status that answers a parse error `ec` of this parser: 431 (head too large or
    // too many fields), 414 (target too long), 413 (body too large) or 400.
    int refusal_status(const error_code& ec) const;

  private:
    void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                         boost::beast::string_view target, int version, error_code& ec) override;
    void on_response_impl(int code, boost::beast::string_view reason, int version,
                          error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                       boost::beast::string_view value, error_code& ec) override;
    void on_header_impl(error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                           error_code& ec) override;
    std::size_t on_body_impl(boost::beast::string_view body, error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                              error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                   error_code& ec) override;
    void on_finish_impl(error_code& ec) override;

    std::size_t take_body(boost::beast::string_view body, error_code& ec);

    RequestLimits limits_;
    RequestHead head_;
    std::string* body_out_ = nullptr;
    std::uint64_t body_received_ = 0;
    bool body_too_large_ = false;
    bool too_many_fields_ = false;
    bool target_too_long_ = false;
};

}  // namespace crucible::net
