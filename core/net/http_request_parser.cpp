#include "core/net/http_request_parser.h"

#include <boost/beast/http/error.hpp>

#include <limits>

namespace crucible::net {

namespace http = boost::beast::http;

RequestParser::RequestParser(const RequestLimits& limits) : limits_(limits) {
    header_limit(limits_.header_bytes);
    // Beast's own body limit (1 MB for requests) is replaced by ours, which also lets an upload
    // route see a Content-Length over the limit and answer it itself (with where to continue).
    // Not boost::none: Beast 1.74 compares `length > none`, which is always true.
    body_limit(std::numeric_limits<std::uint64_t>::max());
}

int RequestParser::refusal_status(const error_code& ec) const {
    if (body_too_large_ || ec == http::error::body_limit) return 413;
    if (target_too_long_) return 414;
    if (too_many_fields_ || ec == http::error::header_limit) return 431;
    // The buffer filled up: inside the head that is a head too large, inside chunked framing
    // (a chunk line or trailers without end) it is a bad request.
    if (ec == http::error::buffer_overflow) return is_header_done() ? 400 : 431;
    return 400;
}

void RequestParser::on_request_impl(http::verb, boost::beast::string_view method_str,
                                    boost::beast::string_view target, int version, error_code& ec) {
    if (target.size() > limits_.target_bytes) {
        target_too_long_ = true;
        ec = http::error::header_limit;
        return;
    }
    head_.method.assign(method_str.data(), method_str.size());
    head_.target.assign(target.data(), target.size());
    head_.version = version;
}

void RequestParser::on_response_impl(int, boost::beast::string_view, int, error_code& ec) {
    ec = http::error::bad_method;  // a request parser never sees a status line
}

void RequestParser::on_field_impl(http::field, boost::beast::string_view name_string,
                                  boost::beast::string_view value, error_code& ec) {
    if (head_.fields.size() >= limits_.header_count) {
        too_many_fields_ = true;
        ec = http::error::header_limit;
        return;
    }
    head_.fields.emplace_back(std::string(name_string.data(), name_string.size()),
                              std::string(value.data(), value.size()));
}

void RequestParser::on_header_impl(error_code&) {}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                      error_code& ec) {
    if (content_length && *content_length > limits_.body_bytes) {
        body_too_large_ = true;
        ec = http::error::body_limit;
    }
}

std::size_t RequestParser::take_body(boost::beast::string_view body, error_code& ec) {
    if (body.size() > limits_.body_bytes - body_received_) {
        body_too_large_ = true;
        ec = http::error::body_limit;
        return 0;
    }
    body_received_ += body.size();
    if (body_out_) body_out_->append(body.data(), body.size());
    return body.size();
}

std::size_t RequestParser::on_body_impl(boost::beast::string_view body, error_code& ec) {
    return take_body(body, ec);
}

void RequestParser::on_chunk_header_impl(std::uint64_t size, boost::beast::string_view,
                                         error_code& ec) {
    // Refused at the chunk's header, before any of its bytes are read.
    if (size > limits_.body_bytes - body_received_) {
        body_too_large_ = true;
        ec = http::error::body_limit;
    }
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                              error_code& ec) {
    return take_body(body, ec);
}

void RequestParser::on_finish_impl(error_code&) {}

}  // namespace crucible::net
