#pragma once
// The `Range: bytes=...` request header of a download (RFC 9110 section 14), as the agent's server
// (http_connection.cpp) applies it to a sized content provider. One range per request: a
// resumed download asks for one, while a list of ranges (1,500 small ones is an old way to make
// a server do much work and memory for one request) is refused. Parsing only; std-only, so the
// fuzz target (tests/fuzz/project/fuzz_http_range.cpp) uses it as it is.
#include <cstdint>
#include <string_view>

namespace crucible::net {

struct ByteRangeRequest {
    enum class Kind {
        Whole,          // no Range, a unit other than bytes, or a malformed one: send it all
        Partial,        // one satisfiable range: 206 with [begin, end)
        Unsatisfiable,  // 416 with Content-Range: bytes */size
        TooMany,        // more than one range: 416 as well
    };
    Kind kind = Kind::Whole;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;  // exclusive
};

// Reads a Range header value for a representation of `size` bytes.
ByteRangeRequest parse_byte_range(std::string_view header, std::uint64_t size);

}  // namespace crucible::net
