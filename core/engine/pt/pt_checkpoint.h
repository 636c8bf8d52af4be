#pragma once
// Ultralytics / PyTorch `.pt` checkpoints read without Python: a flat, ordered state dict
// (name -> tensor, in the dtype the file stores, usually fp16) plus the model's class count,
// scale letter, class names and the checkpoint's train_args. Built on the torch-free archive
// reader and restricted unpickler (pt_archive.h); nothing in the file is ever executed.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json.h"

namespace crucible::engine {

struct PtCheckpoint {
    std::string source;       // "model", "ema", "state_dict" or "root": what was walked
    std::string model_class;  // "ultralytics.nn.tasks.DetectionModel"; "" for plain state dicts
    std::vector<std::pair<std::string, torch::Tensor>> state_dict;  // PyTorch state_dict order
    std::optional<std::int64_t> nc;
    std::string scale;  // "n", "s", "m", "l", "x"; "" when unknown
    std::vector<std::string> names;
    Json yaml;        // the model's yaml dict
    Json train_args;  // null when absent
    std::optional<std::int64_t> epoch;
    std::string date, ultralytics_version;

    // nullptr when absent.
    const torch::Tensor* find(const std::string& name) const;
};

// Throws crucible::InputError (naming the file and what was met) for anything that is not a
// readable checkpoint. Tensors are contiguous CPU copies.
PtCheckpoint read_pt_checkpoint(const std::filesystem::path& path);
// Same from bytes already in memory; `where` names them in errors.
PtCheckpoint read_pt_checkpoint_bytes(std::string bytes, const std::string& where);

}  // namespace crucible::engine
