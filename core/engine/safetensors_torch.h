#pragma once
// Conversion between safetensors files (core/base/safetensors.h) and torch::Tensor. Every dtype
// this LibTorch build represents converts bit-exactly (F16 and BF16 included); the others
// (float8 / uint16-64 on LibTorch 1.x, F4, F6) raise a clear InputError.
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/base/safetensors.h"

namespace crucible::engine {

// The LibTorch dtype of a safetensors dtype, or nullopt when this build has none.
std::optional<torch::ScalarType> torch_dtype_of(SafetensorsDtype dtype);
// The safetensors dtype of a LibTorch dtype; InputError(where, ...) when the format has none
// (quantized types, complex128, ...).
SafetensorsDtype safetensors_dtype_of(torch::ScalarType type, const std::string& where);

// One tensor of a file as a new tensor on `device` (the bytes are copied out of the map, so
// the tensor outlives the file). Throws InputError naming the file and tensor when the dtype
// has no LibTorch equivalent ("dtype F8_E4M3 cannot be represented as a LibTorch tensor in this
// build") or a BOOL byte is neither 0 nor 1.
torch::Tensor to_torch(const SafetensorsFile& file, const SafetensorsTensorInfo& tensor,
                       torch::Device device = torch::kCPU);

// One tensor of a file as a CPU tensor over the file's own bytes (memory-mapped: pages are read
// as they are touched, and no copy is made). Valid only while `file` is open: a caller copies
// what it keeps (`.to(..., /*copy=*/true)`). Where the bytes are not aligned to the element size,
// or the dtype is BOOL (whose bytes are checked), this is to_torch's copy. Same errors as
// to_torch.
torch::Tensor view_torch(const SafetensorsFile& file, const SafetensorsTensorInfo& tensor);

// Every tensor of a file, by name.
std::map<std::string, torch::Tensor> load_safetensors(const SafetensorsFile& file,
                                                      torch::Device device = torch::kCPU);
std::map<std::string, torch::Tensor> load_safetensors(const std::filesystem::path& path,
                                                      torch::Device device = torch::kCPU);

// Serializes tensors (contiguous CPU copies, detached; data in name order) with metadata.
// Throws InputError naming the tensor when it is undefined, sparse or of a dtype the format
// lacks.
std::string save_safetensors_bytes(const std::map<std::string, torch::Tensor>& tensors,
                                   const std::map<std::string, std::string>& metadata = {});
// The same, written atomically to `path`.
void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, torch::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace crucible::engine
