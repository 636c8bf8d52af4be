#pragma once
// What the two LoRA tasks share (SPECS.md "LoRA"): an adapter's hyper-parameters and its scale,
// and the PEFT adapter_config.json both write. The layers stay with their tasks (a Llama
// projection named in the PEFT layout, SD adapters keyed as kohya keys them); their arithmetic
// and their PEFT description are this one.
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible::engine {

struct LoraOptions {
    std::int64_t rank = 8;
    double alpha = 8;
    double dropout = 0;
    bool rslora = false;  // rank-stabilized: scale alpha/√rank instead of alpha/rank

    double scale() const { return lora_scale(alpha, rank, rslora); }
    static double lora_scale(double alpha, std::int64_t rank, bool rslora);
};

// adapter_config.json of a PEFT LoRA adapter on `targets` (module names) of `base_model`.
// `task_type` is PEFT's ("CAUSAL_LM" for a language model), or empty for none (a UNet or a text
// encoder saved on its own).
Json peft_lora_config(const LoraOptions& options, const std::vector<std::string>& targets,
                      const std::string& base_model, const std::string& task_type);

}  // namespace crucible::engine
