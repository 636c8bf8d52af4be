#pragma once
// LibTorch tensors as ONNX constants (core/base/onnx_model.h): exporters of every task build
// their initializers here.
#include <torch/torch.h>

#include <string>

#include "core/base/onnx_model.h"

namespace crucible::engine {

// `tensor`'s values, on the CPU, as `type` (Float or Float16), with its shape.
onnx::Tensor onnx_tensor_from(std::string name, const torch::Tensor& tensor, onnx::DataType type);

}  // namespace crucible::engine
