#pragma once
// A PyTorch zip checkpoint opened without LibTorch: the archive, its unpickled data.pkl, the
// module walk to a flat (name -> tensor descriptor) state dict and the Ultralytics metadata
// (nc, scale, class names, train_args). pt_checkpoint.h turns the descriptors into tensors.
// Free of LibTorch so the fuzz sub-build can compile it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json.h"
#include "core/engine/pt/pickle.h"
#include "core/engine/pt/zip_reader.h"

namespace crucible::engine {

struct PtArchive {
    ZipArchive zip;
    std::string where;   // file name for messages
    std::string prefix;  // folder of data.pkl inside the archive ("archive", "last", ...)
    pickle::PickleDocument doc;

    // Bytes of a storage entry <prefix>/data/<key> (CRC-checked).
    std::string_view storage_bytes(const std::string& key) const;
};

// Opens the archive and unpickles its data.pkl. Refuses (InputError) non-zip files, legacy
// (pre-1.6) pickled checkpoints, TorchScript archives, big-endian archives, and anything the
// zip reader or unpickler refuses.
PtArchive open_pt_archive(std::shared_ptr<const std::string> bytes, std::string where,
                          const pickle::UnpickleLimits& limits = {});

struct PtStateEntry {
    std::string name;
    const pickle::Value* tensor = nullptr;  // Kind::Tensor
};

struct PtModelInfo {
    std::string source;       // "model", "ema", "state_dict" or "root"
    std::string model_class;  // "ultralytics.nn.tasks.DetectionModel", "" for plain state dicts
    std::vector<PtStateEntry> state;
    std::optional<std::int64_t> nc;
    std::string scale;         // "n", "s", ...; "" when unknown
    std::string scale_source;  // "yaml", "yaml_file", "weights"
    std::vector<std::string> names;
    Json yaml;        // the model's yaml dict (null when absent)
    Json train_args;  // the checkpoint's train_args (or the model's args), null when absent
    std::optional<std::int64_t> epoch;
    std::string date, ultralytics_version;
};

struct WalkLimits {
    std::uint32_t max_module_depth = 64;
    std::uint64_t max_tensors = 1'000'000;
    std::uint32_t max_json_depth = 64;
    std::uint64_t max_json_nodes = 1'000'000;
};

// Walks `model` (or `ema` when `model` is None or empty) through _modules / _parameters /
// _buffers (PyTorch state_dict order, None entries and non-persistent buffers skipped), and
// reads nc, scale, names and train_args. Also accepts a plain saved state dict. InputError
// naming the path in the object graph for anything that is not a module.
PtModelInfo describe_pt_model(const PtArchive& archive, const WalkLimits& limits = {});

// Plain JSON image of a pickled value (dict keys as text; tensors as {"__tensor__", "shape"};
// other objects as {"__class__", "args", "state"}), bounded in depth and size.
Json pickle_to_json(const pickle::Value* value, const WalkLimits& limits = {});

}  // namespace crucible::engine
