#pragma once
// Copying a name -> tensor map into a module's parameters, strictly: every parameter must be
// present with its shape, and no tensor may be left over. LoRA adapter parameters (".lora.")
// are not part of a base model and are skipped on the module side.
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace crucible::sd {

struct LoadReport {
    std::vector<std::string> missing;     // parameters with no tensor
    std::vector<std::string> unexpected;  // tensors with no parameter
    std::vector<std::string> mismatched;  // "name: file [a, b] vs model [c, d]"
    bool ok() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
    // "3 missing (a, b, c), 1 unexpected (x)" with at most a few names per kind.
    std::string summary() const;
};

// Compares without copying.
LoadReport check_state_dict(const torch::nn::Module& module,
                            const std::map<std::string, torch::Tensor>& tensors);

// Copies (casting to each parameter's dtype and device). Throws InputError(where, summary) when
// the names or shapes do not match exactly.
void load_state_dict(torch::nn::Module& module, const std::map<std::string, torch::Tensor>& tensors,
                     const std::string& where);

// The base parameters (no LoRA) by name, detached.
std::map<std::string, torch::Tensor> base_state_dict(const torch::nn::Module& module);

}  // namespace crucible::sd
