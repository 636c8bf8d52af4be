#include "core/engine/onnx_torch.h"

#include <cstring>

#include "core/base/error.h"

namespace crucible::engine {

onnx::Tensor onnx_tensor_from(std::string name, const torch::Tensor& tensor, onnx::DataType type) {
    torch::ScalarType scalar = torch::kFloat;
    if (type == onnx::DataType::Float16)
        scalar = torch::kHalf;
    else if (type != onnx::DataType::Float)
        throw Error("ONNX tensor '" + name + "': only float and float16 weights are exported");
    const auto values = tensor.detach().to(torch::kCPU, scalar).contiguous();
    onnx::Tensor t;
    t.name = std::move(name);
    t.type = type;
    t.dims = values.sizes().vec();
    t.raw.resize(static_cast<std::size_t>(values.numel()) * values.element_size());
    if (!t.raw.empty()) std::memcpy(t.raw.data(), values.data_ptr(), t.raw.size());
    return t;
}

torch::ScalarType scalar_type_of(onnx::DataType type) {
    switch (type) {
        case onnx::DataType::Float:
            return torch::kFloat;
        case onnx::DataType::Float16:
            return torch::kHalf;
        case onnx::DataType::Uint8:
            return torch::kUInt8;
        case onnx::DataType::Int32:
            return torch::kInt;
        case onnx::DataType::Int64:
            return torch::kLong;
    }
    throw Error("ONNX: unknown data type " + std::to_string(static_cast<int>(type)));
}

torch::Tensor tensor_from_onnx(const onnx::Tensor& tensor, const std::string& where) {
    std::int64_t count = 1;
    for (auto d : tensor.dims) {
        if (d < 0) throw InputError(where, "tensor '" + tensor.name + "' has a negative dimension");
        count *= d;
    }
    const auto bytes = static_cast<std::size_t>(count) * onnx::element_size(tensor.type);
    if (tensor.raw.size() != bytes)
        throw InputError(where, "tensor '" + tensor.name + "' holds " +
                                    std::to_string(tensor.raw.size()) + " bytes for " +
                                    std::to_string(count) + " elements");
    auto out = torch::empty(tensor.dims, torch::TensorOptions(scalar_type_of(tensor.type)));
    if (bytes) std::memcpy(out.data_ptr(), tensor.raw.data(), bytes);
    return out;
}

}  // namespace crucible::engine
