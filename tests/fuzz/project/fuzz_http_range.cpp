// libFuzzer target for the Range header of downloads (core/net/http_range.h). The first 8 bytes
// are the file's size (a small one half the time), the rest the header. Any header must parse
// into a kind, and a range kept must lie inside the file: begin < end <= size.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/net/http_range.h"
#include "tests/fuzz/project/fuzz_require.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 8) return 0;
    std::uint64_t file_size = 0;
    std::memcpy(&file_size, data, 8);
    if (file_size & 1) file_size = (file_size >> 1) % 1000;
    const std::string_view header(reinterpret_cast<const char*>(data) + 8, size - 8);
    using Kind = crucible::net::ByteRangeRequest::Kind;
    const auto range = crucible::net::parse_byte_range(header, file_size);
    switch (range.kind) {
        case Kind::Partial:
            require(range.begin < range.end && range.end <= file_size);
            break;
        case Kind::Whole:
        case Kind::Unsatisfiable:
        case Kind::TooMany:
            break;
        default:
            require(false);
    }
    return 0;
}
