#include "core/engine/memory_estimate.h"

#include <cstdio>

namespace crucible::engine {

std::int64_t MemoryEstimate::total() const {
    std::int64_t sum = 0;
    for (const auto& [name, bytes] : parts)
        sum += bytes;
    return sum;
}

std::string MemoryEstimate::table() const {
    std::string out;
    char line[160];
    for (const auto& [name, bytes] : parts) {
        std::snprintf(line, sizeof line, "  %-42s %10.1f MiB\n", name.c_str(),
                      static_cast<double>(bytes) / (1 << 20));
        out += line;
    }
    std::snprintf(line, sizeof line, "  %-42s %10.1f MiB (%.2f GiB)\n", "predicted peak",
                  static_cast<double>(total()) / (1 << 20),
                  static_cast<double>(total()) / (1 << 30));
    out += line;
    for (const auto& note : notes)
        out += "  (" + note + ")\n";
    return out;
}

bool MemoryEstimate::fits(std::int64_t capacity_bytes) const {
    return total() + total() / 10 + kDeviceReserve <= capacity_bytes;
}

}  // namespace crucible::engine
