#include "plugins/llm_lora/peft_adapter.h"

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/shape_text.h"
#include "core/engine/safetensors_torch.h"

namespace crucible::llm {
namespace {}  // namespace

std::map<std::string, torch::Tensor> peft_adapter_tensors(LlamaForCausalLmImpl& model) {
    std::vector<std::pair<std::string, const engine::LoraWeights*>> adapters;
    for (auto& [name, proj] : model.projections())
        if (proj->has_adapter()) adapters.emplace_back(name, &proj->lora);
    return engine::peft_lora_tensors(adapters);
}

Json peft_adapter_config(const LoraSpec& spec, const std::string& base_model) {
    return engine::peft_lora_config(spec, spec.targets, base_model, "CAUSAL_LM");
}

void save_peft_adapter(LlamaForCausalLmImpl& model, const LoraSpec& spec,
                       const std::filesystem::path& folder, const std::string& base_model) {
    engine::save_peft_lora(folder, peft_adapter_tensors(model),
                           peft_adapter_config(spec, base_model));
}

LoraSpec load_peft_adapter(LlamaForCausalLmImpl& model, const std::filesystem::path& folder) {
    const auto config_path = folder / "adapter_config.json";
    const std::string where = path_to_utf8(config_path);
    const Json j = read_json_file(config_path);
    if (!j.is_object()) throw InputError(where, "expected a JSON object");
    if (j.value("peft_type", std::string()) != "LORA")
        throw InputError(where, "field 'peft_type': expected \"LORA\"");
    LoraSpec spec;
    spec.rank = get_integer(j, "r", where);
    spec.alpha = get_number(j, "lora_alpha", where);
    spec.dropout = j.contains("lora_dropout") ? get_number(j, "lora_dropout", where) : 0.0;
    spec.rslora = j.value("use_rslora", false);
    if (j.value("fan_in_fan_out", false))
        throw InputError(where, "fan_in_fan_out true is not supported");
    const Json& targets = require_field(j, "target_modules", where);
    if (!targets.is_array()) throw InputError(where, "field 'target_modules': expected a list");
    spec.targets.clear();
    for (const auto& t : targets) {
        if (!t.is_string()) throw InputError(where, "field 'target_modules': expected strings");
        spec.targets.push_back(t.get<std::string>());
    }
    try {
        spec.validate();
    } catch (const InputError& e) {
        throw InputError(where, e.what());
    }
    model.add_lora(spec);
    const auto st_path = folder / "adapter_model.safetensors";
    const auto tensors = engine::load_safetensors(st_path);
    const std::string st_where = path_to_utf8(st_path);
    auto expected = peft_adapter_tensors(model);
    for (const auto& [name, t] : tensors)
        if (!expected.count(name))
            throw InputError(st_where, "unexpected tensor '" + name + "' (not a LoRA weight of " +
                                           "this model and target list)");
    std::map<std::string, torch::Tensor> params;
    for (auto& [name, proj] : model.projections()) {
        if (!proj->has_adapter()) continue;
        params[engine::peft_lora_tensor_name(name, 'A')] = proj->lora.down;
        params[engine::peft_lora_tensor_name(name, 'B')] = proj->lora.up;
    }
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : params) {
        const auto it = tensors.find(name);
        if (it == tensors.end()) throw InputError(st_where, "missing tensor '" + name + "'");
        if (it->second.sizes() != p.sizes())
            throw InputError(st_where, "tensor '" + name + "' has shape " +
                                           shape_text(it->second.sizes()) + ", expected " +
                                           shape_text(p.sizes()));
        p.copy_(it->second.to(p.device(), p.scalar_type()));
    }
    return spec;
}

}  // namespace crucible::llm
