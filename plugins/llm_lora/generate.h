#pragma once
// Text generation with the KV cache: greedy (temperature 0) or nucleus (top-p) sampling.
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "plugins/llm_lora/llama_model.h"

namespace crucible::llm {

struct GenerateOptions {
    std::int64_t max_new_tokens = 32;
    double temperature = 0.0;  // 0: greedy
    double top_p = 1.0;
    std::optional<std::int64_t> eos_id;  // stop after this token
    std::uint64_t seed = 0;
};

// Continues `prompt` (ids); returns the new ids only. Stops at eos (included) or at the
// model's max_position_embeddings.
std::vector<std::int64_t> generate(LlamaForCausalLmImpl& model,
                                   const std::vector<std::int64_t>& prompt,
                                   const GenerateOptions& options);

}  // namespace crucible::llm
