#pragma once
// Model weights as safetensors (DESIGN.md "File formats"): every parameter and buffer under its
// module path name, with string metadata (provenance: Crucible version, config and its hash,
// dataset hash, seed, device). Loading matches by name and shape.
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/engine/tensor_state.h"

namespace crucible::engine {

// Writes atomically the tensors `which` selects (tensor_state.h).
void save_module_safetensors(torch::nn::Module& module, const std::filesystem::path& path,
                             const std::map<std::string, std::string>& metadata,
                             ModuleState which = ModuleState::All);

struct WeightsLoadReport {
    std::size_t loaded = 0;
    std::vector<std::string> missing;     // in the model, not in the file
    std::vector<std::string> unexpected;  // in the file, not in the model
    std::vector<std::string> mismatched;  // same name, other shape
};

// Copies the file's tensors into the module by name; tensors of another shape are skipped and
// reported. Throws InputError naming the file when it is no valid safetensors file or when not a
// single tensor matched.
WeightsLoadReport load_module_safetensors(torch::nn::Module& module,
                                          const std::filesystem::path& path);

std::map<std::string, std::string> read_safetensors_metadata(const std::filesystem::path& path);

}  // namespace crucible::engine
