#include "core/engine/weights_file.h"

#include <cstring>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/safetensors.h"

namespace crucible::engine {

namespace {

SafetensorsDtype to_st_dtype(torch::ScalarType t, const std::string& name) {
    switch (t) {
        case torch::kFloat32:
            return SafetensorsDtype::F32;
        case torch::kFloat64:
            return SafetensorsDtype::F64;
        case torch::kFloat16:
            return SafetensorsDtype::F16;
        case torch::kBFloat16:
            return SafetensorsDtype::BF16;
        case torch::kInt64:
            return SafetensorsDtype::I64;
        case torch::kInt32:
            return SafetensorsDtype::I32;
        case torch::kInt16:
            return SafetensorsDtype::I16;
        case torch::kInt8:
            return SafetensorsDtype::I8;
        case torch::kUInt8:
            return SafetensorsDtype::U8;
        case torch::kBool:
            return SafetensorsDtype::BOOL;
        default:
            throw Error("weights: tensor '" + name + "' has a dtype safetensors cannot hold");
    }
}

std::optional<torch::ScalarType> to_torch_dtype(SafetensorsDtype t) {
    switch (t) {
        case SafetensorsDtype::F32:
            return torch::kFloat32;
        case SafetensorsDtype::F64:
            return torch::kFloat64;
        case SafetensorsDtype::F16:
            return torch::kFloat16;
        case SafetensorsDtype::BF16:
            return torch::kBFloat16;
        case SafetensorsDtype::I64:
            return torch::kInt64;
        case SafetensorsDtype::I32:
            return torch::kInt32;
        case SafetensorsDtype::I16:
            return torch::kInt16;
        case SafetensorsDtype::I8:
            return torch::kInt8;
        case SafetensorsDtype::U8:
            return torch::kUInt8;
        case SafetensorsDtype::BOOL:
            return torch::kBool;
        default:
            return std::nullopt;
    }
}

}  // namespace

void save_module_safetensors(torch::nn::Module& module, const std::filesystem::path& path,
                             const std::map<std::string, std::string>& metadata,
                             ModuleState which) {
    auto state = module_state(module, which);
    std::vector<torch::Tensor> keep;  // contiguous CPU copies alive during the write
    std::vector<SafetensorsTensorView> views;
    for (auto& [name, tensor] : state) {
        torch::Tensor cpu = tensor.detach().to(torch::kCPU).contiguous();
        keep.push_back(cpu);
        SafetensorsTensorView v;
        v.name = name;
        v.dtype = to_st_dtype(cpu.scalar_type(), name);
        v.shape.assign(cpu.sizes().begin(), cpu.sizes().end());
        v.data = std::span<const std::byte>(static_cast<const std::byte*>(cpu.data_ptr()),
                                            static_cast<std::size_t>(cpu.nbytes()));
        views.push_back(std::move(v));
    }
    std::map<std::string, std::string> meta = metadata;
    meta.emplace("format", "pt");
    write_safetensors_file(path, views, meta);
}

WeightsLoadReport load_module_safetensors(torch::nn::Module& module,
                                          const std::filesystem::path& path) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    WeightsLoadReport report;
    std::set<std::string> used;
    torch::NoGradGuard no_grad;
    for (auto& [name, tensor] : module_state(module, ModuleState::All)) {
        const SafetensorsTensorInfo* info = file.find(name);
        if (!info) {
            report.missing.push_back(name);
            continue;
        }
        used.insert(name);
        const auto dtype = to_torch_dtype(info->dtype);
        if (!dtype)
            throw InputError(path_to_utf8(path),
                             "tensor '" + name + "' has a dtype LibTorch cannot read");
        if (!tensor.sizes().equals(info->shape)) {
            report.mismatched.push_back(name);
            continue;
        }
        const auto bytes = file.data(*info);
        torch::Tensor src = torch::empty(info->shape, torch::TensorOptions().dtype(*dtype));
        if (static_cast<std::size_t>(src.nbytes()) != bytes.size())
            throw InputError(path_to_utf8(path), "tensor '" + name + "' has a wrong byte size");
        if (!bytes.empty()) std::memcpy(src.data_ptr(), bytes.data(), bytes.size());
        tensor.copy_(src);
        ++report.loaded;
    }
    for (const auto& info : file.tensors())
        if (!used.count(info.name)) report.unexpected.push_back(info.name);
    if (report.loaded == 0)
        throw InputError(path_to_utf8(path),
                         "no tensor of this file matches the model (by name and shape)");
    return report;
}

std::map<std::string, std::string> read_safetensors_metadata(const std::filesystem::path& path) {
    return SafetensorsFile::open(path).metadata();
}

}  // namespace crucible::engine
