#include "core/store/packed_values.h"

namespace crucible::store {

void append_packed_value(std::string& blob, std::uint32_t name_id, double value) {
    const auto bits = std::bit_cast<std::uint64_t>(value);
    char bytes[kPackedValueBytes];
    for (int b = 0; b < 4; ++b)
        bytes[b] = static_cast<char>((name_id >> (8 * b)) & 0xff);
    for (int b = 0; b < 8; ++b)
        bytes[4 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
    blob.append(bytes, kPackedValueBytes);
}

}  // namespace crucible::store
