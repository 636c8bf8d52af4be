#include "core/engine/safetensors_torch.h"

#include <torch/version.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"

// safetensors data is little-endian; so is every platform Crucible builds for.
static_assert(std::endian::native == std::endian::little, "big-endian hosts are not supported");

// Crucible needs LibTorch >= 2.4 (float8 e4m3fn/e5m2 and uint16/32/64 are there); float8
// e8m0fnu came in 2.7.
#define CRUCIBLE_TORCH_AT_LEAST(major, minor) \
    (TORCH_VERSION_MAJOR > (major) ||         \
     (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace crucible::engine {
namespace {

using D = SafetensorsDtype;

// Pairs with a LibTorch equivalent in this build.
const std::vector<std::pair<D, torch::ScalarType>>& dtype_pairs() {
    static const std::vector<std::pair<D, torch::ScalarType>> pairs {
        {D::BOOL, torch::kBool}, {D::U8, torch::kUInt8}, {D::I8, torch::kInt8},
            {D::I16, torch::kInt16}, {D::I32, torch::kInt32}, {D::I64, torch::kInt64},
            {D::F16, torch::kFloat16}, {D::BF16, torch::kBFloat16}, {D::F32, torch::kFloat32},
            {D::F64, torch::kFloat64}, {D::C64, torch::kComplexFloat},
            {D::F8_E5M2, torch::kFloat8_e5m2}, {D::F8_E4M3, torch::kFloat8_e4m3fn},
            {D::U16, torch::kUInt16}, {D::U32, torch::kUInt32}, {D::U64, torch::kUInt64},
#if CRUCIBLE_TORCH_AT_LEAST(2, 7)
            {D::F8_E8M0, torch::kFloat8_e8m0fnu},
#endif
    };
    return pairs;
}

std::string torch_version_text() {
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
}

}  // namespace

std::optional<torch::ScalarType> torch_dtype_of(SafetensorsDtype dtype) {
    for (const auto& [st, tt] : dtype_pairs())
        if (st == dtype) return tt;
    return std::nullopt;
}

SafetensorsDtype safetensors_dtype_of(torch::ScalarType type, const std::string& where) {
    for (const auto& [st, tt] : dtype_pairs())
        if (tt == type) return st;
    throw InputError(where, std::string("LibTorch dtype ") + c10::toString(type) +
                                " has no safetensors equivalent");
}

torch::Tensor to_torch(const SafetensorsFile& file, const SafetensorsTensorInfo& tensor,
                       torch::Device device) {
    const auto type = torch_dtype_of(tensor.dtype);
    if (!type)
        throw InputError(file.where(), "tensor '" + tensor.name + "': dtype " +
                                           std::string(safetensors_dtype_name(tensor.dtype)) +
                                           " cannot be represented as a LibTorch tensor in this "
                                           "build (LibTorch " +
                                           torch_version_text() + ")");
    const auto bytes = file.data(tensor);
    if (tensor.dtype == SafetensorsDtype::BOOL) {
        for (std::size_t i = 0; i < bytes.size(); ++i)
            if (std::to_integer<unsigned>(bytes[i]) > 1)
                throw InputError(file.where(),
                                 "tensor '" + tensor.name + "': BOOL element " + std::to_string(i) +
                                     " is " + std::to_string(std::to_integer<unsigned>(bytes[i])) +
                                     ", not 0 or 1");
    }
    auto out = torch::empty(tensor.shape, torch::TensorOptions().dtype(*type));
    if (static_cast<std::size_t>(out.nbytes()) != bytes.size())
        throw Error(file.where() + ": tensor '" + tensor.name + "': LibTorch size " +
                    std::to_string(out.nbytes()) + " differs from " + std::to_string(bytes.size()) +
                    " bytes in the file");
    if (!bytes.empty()) std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
    return device.is_cpu() ? out : out.to(device);
}

torch::Tensor view_torch(const SafetensorsFile& file, const SafetensorsTensorInfo& tensor) {
    const auto type = torch_dtype_of(tensor.dtype);
    const auto bytes = file.data(tensor);
    if (!type || tensor.dtype == SafetensorsDtype::BOOL || bytes.empty() ||
        reinterpret_cast<std::uintptr_t>(bytes.data()) % c10::elementSize(*type) != 0)
        return to_torch(file, tensor);
    const torch::Tensor view = torch::from_blob(const_cast<std::byte*>(bytes.data()), tensor.shape,
                                                torch::TensorOptions().dtype(*type));
    if (static_cast<std::size_t>(view.nbytes()) != bytes.size())
        throw Error(file.where() + ": tensor '" + tensor.name + "': LibTorch size " +
                    std::to_string(view.nbytes()) + " differs from " +
                    std::to_string(bytes.size()) + " bytes in the file");
    return view;
}

std::map<std::string, torch::Tensor> load_safetensors(const SafetensorsFile& file,
                                                      torch::Device device) {
    std::map<std::string, torch::Tensor> out;
    for (const auto& t : file.tensors())
        out.emplace(t.name, to_torch(file, t, device));
    return out;
}

std::map<std::string, torch::Tensor> load_safetensors(const std::filesystem::path& path,
                                                      torch::Device device) {
    return load_safetensors(SafetensorsFile::open(path), device);
}

std::string save_safetensors_bytes(const std::map<std::string, torch::Tensor>& tensors,
                                   const std::map<std::string, std::string>& metadata) {
    std::vector<torch::Tensor> keep;  // contiguous CPU copies the views point into
    std::vector<SafetensorsTensorView> views;
    keep.reserve(tensors.size());
    views.reserve(tensors.size());
    for (const auto& [name, tensor] : tensors) {
        if (!tensor.defined()) throw InputError(name, "tensor is undefined");
        if (tensor.layout() != torch::kStrided)
            throw InputError(name, "only dense tensors can be saved (this one is sparse)");
        const auto dtype = safetensors_dtype_of(tensor.scalar_type(), name);
        auto cpu = tensor.detach().to(torch::kCPU).resolve_conj().resolve_neg().contiguous();
        keep.push_back(cpu);
        const auto sizes = cpu.sizes();
        views.push_back({name,
                         dtype,
                         std::vector<std::int64_t>(sizes.begin(), sizes.end()),
                         {static_cast<const std::byte*>(cpu.data_ptr()),
                          static_cast<std::size_t>(cpu.nbytes())}});
    }
    return write_safetensors_bytes(views, metadata);
}

void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, torch::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    write_file_atomically(path, save_safetensors_bytes(tensors, metadata));
}

}  // namespace crucible::engine
