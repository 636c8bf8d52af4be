#pragma once
// The numeric values of one event, packed into one blob of the run_points table: for each value
// a 4-byte metric name id and an 8-byte IEEE double, both little-endian (NaN stands for null or
// non-finite). One row per event instead of one per value halves or better the rows a plot reads
// (a detection metric event carries six values), which is what keeps reading 1,000,000 events
// under a second.
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace crucible::store {

inline constexpr std::size_t kPackedValueBytes = 12;

void append_packed_value(std::string& blob, std::uint32_t name_id, double value);

// Calls f(name_id, value) for every value in `blob`; a trailing partial record is ignored.
template <class F>
void for_each_packed_value(std::string_view blob, F&& f) {
    const auto* p = reinterpret_cast<const unsigned char*>(blob.data());
    const std::size_t n = blob.size() / kPackedValueBytes;
    for (std::size_t i = 0; i < n; ++i, p += kPackedValueBytes) {
        std::uint32_t id;
        std::uint64_t bits;
        if constexpr (std::endian::native == std::endian::little) {
            std::memcpy(&id, p, 4);
            std::memcpy(&bits, p + 4, 8);
        } else {
            id = 0;
            bits = 0;
            for (int b = 3; b >= 0; --b)
                id = (id << 8) | p[b];
            for (int b = 11; b >= 4; --b)
                bits = (bits << 8) | p[b];
        }
        f(id, std::bit_cast<double>(bits));
    }
}

}  // namespace crucible::store
