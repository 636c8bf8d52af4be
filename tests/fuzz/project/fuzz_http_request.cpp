// libFuzzer target for the agent server's request parser (core/net/http_request_parser.h),
// fed as the connection feeds it: bytes arrive in pieces (sizes taken from the input) into a
// bounded buffer that the parser consumes. Any bytes must end in a parsed request or a refusal
// with a status of 400, 413, 414 or 431, never a crash or a hang; the limits always hold (head
// bytes, field count, target length, body bytes), and a body refused for its size says so.
#include <boost/asio/buffer.hpp>
#include <boost/assert.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/net/http_request_parser.h"
#include "tests/fuzz/project/fuzz_require.h"

// BOOST_ENABLE_ASSERT_HANDLER (targets.cmake): a failed Beast assertion is a crash, except
// Beast 1.74's `n >= 5` in parse_chunk_header, which a last chunk split after "0\r\n\r" trips
// although the code after it asks for more bytes correctly (fixed upstream in Beast PR #2861;
// release builds have no assertions).
namespace boost {
void assertion_failed(const char* expr, const char* function, const char* file, long line) {
    if (std::strcmp(expr, "n >= 5") == 0 && std::strstr(function, "parse_chunk_header")) return;
    std::fprintf(stderr, "%s:%ld: %s: assertion %s failed\n", file, line, function, expr);
    __builtin_trap();
}
void assertion_failed_msg(const char* expr, const char* msg, const char* function, const char* file,
                          long line) {
    std::fprintf(stderr, "%s:%ld: %s: assertion %s (%s) failed\n", file, line, function, expr, msg);
    __builtin_trap();
}
}  // namespace boost

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    // Small limits, so that inputs of a few KB reach every one of them.
    crucible::net::RequestLimits limits;
    limits.header_bytes = 2048;
    limits.header_count = 16;
    limits.target_bytes = 256;
    limits.body_bytes = 4096;
    constexpr std::size_t kBufferLimit = 8192;   // the connection's buffer is bounded too
    const std::size_t piece = 1 + data[0] % 64;  // bytes per socket read
    ++data;
    --size;

    crucible::net::RequestParser parser(limits);
    std::string body;
    boost::beast::error_code ec;
    std::string buffer;
    std::size_t fed = 0;
    bool header_seen = false;
    while (!parser.is_done()) {
        if (fed < size && buffer.size() < kBufferLimit) {
            const std::size_t n = std::min({piece, size - fed, kBufferLimit - buffer.size()});
            buffer.append(reinterpret_cast<const char*>(data) + fed, n);
            fed += n;
        } else if (fed >= size) {
            if (parser.is_header_done()) parser.put_eof(ec);
            break;
        } else {
            break;  // the buffer is full and nothing is consumed: the connection refuses it
        }
        const std::size_t used = parser.put(boost::asio::buffer(buffer), ec);
        require(used <= buffer.size());
        buffer.erase(0, used);
        if (parser.is_header_done() && !header_seen) {
            header_seen = true;
            parser.body_into(&body);  // where the connection puts a body it reads whole
            (void)parser.keep_alive();
            (void)parser.content_length();
        }
        if (ec == boost::beast::http::error::need_more) {
            ec = {};
            continue;
        }
        if (ec) {
            const int status = parser.refusal_status(ec);
            require(status == 400 || status == 413 || status == 414 || status == 431);
            if (parser.body_too_large()) require(status == 413);
            break;
        }
    }
    const auto& head = parser.head();
    require(head.fields.size() <= limits.header_count);
    require(head.target.size() <= limits.target_bytes);
    require(body.size() <= limits.body_bytes);
    require(parser.body_received() <= limits.body_bytes);
    if (parser.is_done()) require(!head.method.empty() && !head.target.empty());
    return 0;
}
