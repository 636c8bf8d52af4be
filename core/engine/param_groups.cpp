#include "core/engine/param_groups.h"

#include <algorithm>

namespace crucible::engine {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_norm_module(const torch::nn::Module& module) {
    std::string name = module.name();  // e.g. "torch::nn::BatchNorm2dImpl" or "RMSNorm"
    if (ends_with(name, "Impl")) name.resize(name.size() - 4);
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find("batchnorm") != std::string::npos ||
           lower.find("groupnorm") != std::string::npos ||
           lower.find("layernorm") != std::string::npos ||
           lower.find("instancenorm") != std::string::npos || ends_with(lower, "norm");
}

}  // namespace

ParamGroups default_parameter_split(torch::nn::Module& model) {
    ParamGroups groups;
    for (const auto& item : model.named_modules("", /*include_self=*/true)) {
        const bool norm = is_norm_module(*item.value());
        for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
            if (!p.value().requires_grad()) continue;
            const std::string full = item.key().empty() ? p.key() : item.key() + "." + p.key();
            if (ends_with(p.key(), "bias")) {
                groups.biases.push_back(p.value());
                groups.bias_names.push_back(full);
            } else if (norm) {
                groups.norm_weights.push_back(p.value());
                groups.norm_names.push_back(full);
            } else {
                groups.weights.push_back(p.value());
                groups.weight_names.push_back(full);
            }
        }
    }
    return groups;
}

}  // namespace crucible::engine
