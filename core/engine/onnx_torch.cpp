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

}  // namespace crucible::engine
