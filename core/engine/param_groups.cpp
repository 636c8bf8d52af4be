#include "core/engine/param_groups.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/base/error.h"

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

bool valid_name(const std::string& name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '-' || c == '.';
    });
}

// Calls visit(full name, parameter, in a normalization module) for every trainable parameter,
// module by module (the model first, then its submodules depth-first, as named_modules lists).
template <class Visit>
void for_each_trainable(torch::nn::Module& model, Visit visit) {
    for (const auto& item : model.named_modules("", /*include_self=*/true)) {
        const bool norm = is_norm_module(*item.value());
        for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
            if (!p.value().requires_grad()) continue;
            visit(item.key().empty() ? p.key() : item.key() + "." + p.key(), p.value(), norm);
        }
    }
}

}  // namespace

std::size_t parameter_count(const ParamGroups& groups) {
    std::size_t n = 0;
    for (const auto& g : groups)
        n += g.params.size();
    return n;
}

std::vector<torch::Tensor> all_parameters(const ParamGroups& groups) {
    std::vector<torch::Tensor> out;
    out.reserve(parameter_count(groups));
    for (const auto& g : groups)
        out.insert(out.end(), g.params.begin(), g.params.end());
    return out;
}

std::vector<std::string> group_names(const ParamGroups& groups) {
    std::vector<std::string> out;
    for (const auto& g : groups)
        out.push_back(g.name);
    return out;
}

void check_param_groups(const ParamGroups& groups) {
    if (groups.empty()) throw Error("the task declares no parameter groups");
    std::set<std::string> names;
    std::set<const void*> seen;
    for (const auto& g : groups) {
        if (!valid_name(g.name))
            throw Error("parameter group '" + g.name +
                        "': a name is letters, digits, '_', '-' and '.'");
        if (!names.insert(g.name).second)
            throw Error("parameter group '" + g.name + "' is declared twice");
        if (!std::isfinite(g.lr_factor) || g.lr_factor < 0)
            throw Error("parameter group '" + g.name + "': learning-rate factor " +
                        std::to_string(g.lr_factor) + " is not a finite number >= 0");
        if (g.param_names.size() != g.params.size())
            throw Error("parameter group '" + g.name + "': " + std::to_string(g.params.size()) +
                        " parameters but " + std::to_string(g.param_names.size()) + " names");
        for (std::size_t i = 0; i < g.params.size(); ++i)
            if (!seen.insert(g.params[i].unsafeGetTensorImpl()).second)
                throw Error("parameter '" + g.param_names[i] + "' is in two parameter groups");
    }
}

ParamGroups default_parameter_split(torch::nn::Module& model) {
    ParamGroups groups(3);
    groups[0].name = "pg0";  // biases
    groups[0].decay = WeightDecay::None;
    groups[0].warmup = Warmup::Bias;
    groups[1].name = "pg1";  // weights
    groups[2].name = "pg2";  // normalization weights
    groups[2].decay = WeightDecay::None;
    for_each_trainable(model, [&](std::string name, const torch::Tensor& p, bool norm) {
        const std::size_t g = ends_with(name, "bias") ? 0 : norm ? 2 : 1;
        groups[g].add(std::move(name), p);
    });
    return groups;
}

ParamGroup trainable_parameters(torch::nn::Module& model, std::string name) {
    ParamGroup group;
    group.name = std::move(name);
    for_each_trainable(model, [&](std::string param_name, const torch::Tensor& p, bool) {
        group.add(std::move(param_name), p);
    });
    return group;
}

}  // namespace crucible::engine
