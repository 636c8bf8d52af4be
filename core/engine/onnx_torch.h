#pragma once
// LibTorch tensors as ONNX constants (core/base/onnx_model.h) and back: exporters of every task
// build their initializers here, and OnnxRunner reads them.
#include <torch/torch.h>

#include <string>

#include "core/base/onnx_model.h"

namespace crucible::engine {

// `tensor`'s values, on the CPU, as `type` (Float or Float16), with its shape.
onnx::Tensor onnx_tensor_from(std::string name, const torch::Tensor& tensor, onnx::DataType type);

// The torch dtype of an ONNX element type.
torch::ScalarType scalar_type_of(onnx::DataType type);

// A constant's values as a CPU tensor of its type and shape (a copy). Throws InputError naming
// `where` and the tensor when its bytes do not match its shape.
torch::Tensor tensor_from_onnx(const onnx::Tensor& tensor, const std::string& where);

}  // namespace crucible::engine
