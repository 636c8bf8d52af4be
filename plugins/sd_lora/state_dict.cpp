#include "plugins/sd_lora/state_dict.h"

#include <torch/torch.h>

#include <set>

#include "core/base/error.h"
#include "core/base/shape_text.h"

namespace crucible::sd {
namespace {

bool is_lora_name(const std::string& name) {
    return name.find(".lora.") != std::string::npos || name.rfind("lora.", 0) == 0;
}

void list_names(std::string& out, const char* kind, const std::vector<std::string>& names) {
    if (names.empty()) return;
    if (!out.empty()) out += "; ";
    out += std::to_string(names.size()) + " " + kind + " (";
    for (std::size_t i = 0; i < names.size() && i < 5; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > 5) out += ", ...";
    out += ")";
}

}  // namespace

std::string LoadReport::summary() const {
    std::string s;
    list_names(s, "missing", missing);
    list_names(s, "unexpected", unexpected);
    list_names(s, "mismatched", mismatched);
    return s.empty() ? "ok" : s;
}

LoadReport check_state_dict(const torch::nn::Module& module,
                            const std::map<std::string, torch::Tensor>& tensors) {
    LoadReport r;
    std::set<std::string> seen;
    for (const auto& item : module.named_parameters(true)) {
        if (is_lora_name(item.key())) continue;
        seen.insert(item.key());
        const auto it = tensors.find(item.key());
        if (it == tensors.end()) {
            r.missing.push_back(item.key());
            continue;
        }
        if (it->second.sizes() != item.value().sizes())
            r.mismatched.push_back(item.key() + ": file " + shape_text(it->second.sizes()) +
                                   " vs model " + shape_text(item.value().sizes()));
    }
    for (const auto& [name, t] : tensors)
        if (!seen.count(name)) r.unexpected.push_back(name);
    return r;
}

void load_state_dict(torch::nn::Module& module, const std::map<std::string, torch::Tensor>& tensors,
                     const std::string& where) {
    const LoadReport r = check_state_dict(module, tensors);
    if (!r.ok()) throw InputError(where, "weights do not match the model: " + r.summary());
    torch::NoGradGuard no_grad;
    for (auto& item : module.named_parameters(true)) {
        if (is_lora_name(item.key())) continue;
        auto& p = item.value();
        p.copy_(tensors.at(item.key()).to(p.device(), p.scalar_type()));
    }
}

std::map<std::string, torch::Tensor> base_state_dict(const torch::nn::Module& module) {
    std::map<std::string, torch::Tensor> out;
    for (const auto& item : module.named_parameters(true))
        if (!is_lora_name(item.key())) out[item.key()] = item.value().detach();
    return out;
}

}  // namespace crucible::sd
