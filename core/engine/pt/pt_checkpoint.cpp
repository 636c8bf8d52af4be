#include "core/engine/pt/pt_checkpoint.h"

#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/pt/pt_archive.h"

namespace crucible::engine {
namespace {

using pickle::StorageType;

torch::ScalarType scalar_type(StorageType type) {
    switch (type) {
        case StorageType::Half:
            return torch::kHalf;
        case StorageType::Float:
            return torch::kFloat;
        case StorageType::Double:
            return torch::kDouble;
        case StorageType::BFloat16:
            return torch::kBFloat16;
        case StorageType::Long:
            return torch::kLong;
        case StorageType::Int:
            return torch::kInt;
        case StorageType::Short:
            return torch::kShort;
        case StorageType::Char:
            return torch::kChar;
        case StorageType::Byte:
            return torch::kByte;
        case StorageType::Bool:
            return torch::kBool;
    }
    return torch::kFloat;
}

// Whole storage as a 1-D tensor: an aligned copy of the entry's bytes (entries need not be
// aligned inside the archive; bool bytes are normalised to 0/1).
torch::Tensor load_storage(const PtArchive& archive, const pickle::StorageData& s) {
    const std::string_view bytes = archive.storage_bytes(s.key);
    const std::size_t element = pickle::storage_element_size(s.type);
    // The unpickler already checked numel * element <= entry size.
    const std::uint64_t nbytes = s.numel * element;
    if (nbytes > bytes.size())
        throw InputError(archive.where,
                         "storage '" + s.key + "' is shorter than its element count");
    torch::Tensor t = torch::empty({static_cast<std::int64_t>(s.numel)},
                                   torch::TensorOptions().dtype(scalar_type(s.type)));
    if (nbytes > 0) std::memcpy(t.data_ptr(), bytes.data(), static_cast<std::size_t>(nbytes));
    if (s.type == StorageType::Bool && nbytes > 0) {
        auto* p = static_cast<unsigned char*>(t.data_ptr());
        for (std::uint64_t i = 0; i < nbytes; ++i)
            p[i] = p[i] ? 1 : 0;
    }
    return t;
}

}  // namespace

const torch::Tensor* PtCheckpoint::find(const std::string& name) const {
    for (const auto& [n, t] : state_dict)
        if (n == name) return &t;
    return nullptr;
}

PtCheckpoint read_pt_checkpoint_bytes(std::string bytes, const std::string& where) {
    const std::uint64_t archive_size = bytes.size();
    auto shared = std::make_shared<const std::string>(std::move(bytes));
    const PtArchive archive = open_pt_archive(shared, where);
    PtModelInfo info = describe_pt_model(archive);

    PtCheckpoint ck;
    ck.source = info.source;
    ck.model_class = info.model_class;
    ck.nc = info.nc;
    ck.scale = info.scale;
    ck.names = std::move(info.names);
    ck.yaml = std::move(info.yaml);
    ck.train_args = std::move(info.train_args);
    ck.epoch = info.epoch;
    ck.date = info.date;
    ck.ultralytics_version = info.ultralytics_version;

    // Views are copied out of their storages; many views of one big storage could multiply
    // memory, so the total is bounded by a few times the archive size.
    const std::uint64_t budget = 4 * archive_size + (64u << 20);
    std::uint64_t used = 0;
    std::unordered_map<std::string, torch::Tensor> storages;
    ck.state_dict.reserve(info.state.size());
    for (const PtStateEntry& e : info.state) {
        const pickle::TensorData& td = *e.tensor->tensor;
        const pickle::StorageData& sd = *td.storage->storage;
        auto it = storages.find(sd.key);
        if (it == storages.end()) it = storages.emplace(sd.key, load_storage(archive, sd)).first;
        std::uint64_t numel = 1;
        for (auto s : td.sizes)
            numel *= static_cast<std::uint64_t>(s);  // bounded by the storage (unpickler)
        used += numel * pickle::storage_element_size(sd.type);
        if (used > budget)
            throw InputError(where, "tensors would need more than " + std::to_string(budget) +
                                        " bytes (views overlapping one storage many times)");
        torch::Tensor view =
            it->second.as_strided(td.sizes, td.strides, static_cast<std::int64_t>(td.offset));
        ck.state_dict.emplace_back(e.name, view.clone(torch::MemoryFormat::Contiguous));
    }
    return ck;
}

PtCheckpoint read_pt_checkpoint(const std::filesystem::path& path) {
    // 64 GiB: larger than any checkpoint this reader is meant for, small enough to refuse junk.
    std::string bytes = read_file_bytes_limited(path, std::uint64_t{64} << 30);
    return read_pt_checkpoint_bytes(std::move(bytes), path_to_utf8(path));
}

}  // namespace crucible::engine
