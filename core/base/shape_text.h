#pragma once
// How a tensor's shape reads in an error message: "[2, 3, 4]", "[]" for a scalar. For any range
// of integers: a std::vector<std::int64_t> (safetensors headers) or a torch::IntArrayRef
// (tensor.sizes()).
#include <string>

namespace crucible {

template <class Shape>
std::string shape_text(const Shape& shape) {
    std::string out = "[";
    bool first = true;
    for (const auto extent : shape) {
        out += (first ? "" : ", ") + std::to_string(extent);
        first = false;
    }
    return out + "]";
}

}  // namespace crucible
