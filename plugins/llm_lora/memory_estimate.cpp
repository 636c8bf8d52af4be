#include "plugins/llm_lora/memory_estimate.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/engine/nf4.h"

namespace crucible::llm {
namespace {

struct Projection {
    const char* name;
    std::int64_t in, out;
};

std::int64_t nf4_bytes(std::int64_t n) {
    const std::int64_t blocks = (n + engine::kNf4BlockSize - 1) / engine::kNf4BlockSize;
    const std::int64_t groups =
        (blocks + engine::kNf4AbsmaxBlockSize - 1) / engine::kNf4AbsmaxBlockSize;
    return (n + 1) / 2 + blocks + 4 * groups + 4;
}

}  // namespace

engine::MemoryEstimate estimate_llm_memory(const LlmMemoryPlan& plan) {
    const LlamaConfig& c = plan.config;
    LoraSpec lora = plan.lora;
    lora.validate();
    const auto targeted = [&](const std::string& name) {
        return std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end();
    };
    const std::int64_t e = static_cast<std::int64_t>(c10::elementSize(plan.dtype));
    const std::int64_t tokens = plan.batch * plan.seq;
    const std::int64_t h = c.hidden_size, inter = c.intermediate_size;
    const std::int64_t layers = c.num_hidden_layers, vocab = c.vocab_size;
    const std::int64_t d = c.head_size(), heads = c.num_attention_heads;
    const std::int64_t kv_heads = c.num_key_value_heads;
    const std::vector<Projection> projections{
        {"q_proj", h, heads * d}, {"k_proj", h, kv_heads * d}, {"v_proj", h, kv_heads * d},
        {"o_proj", heads * d, h}, {"gate_proj", h, inter},     {"up_proj", h, inter},
        {"down_proj", inter, h}};

    engine::MemoryEstimate m;
    // Weights.
    std::int64_t projection_bytes = 0, largest = 0, adapter_values = 0, adapter_inputs = 0;
    for (const auto& p : projections) {
        const std::int64_t n = p.in * p.out;
        projection_bytes += plan.nf4 ? nf4_bytes(n) : n * e;
        largest = std::max(largest, n);
        if (!targeted(p.name)) continue;
        adapter_values += lora.rank * (p.in + p.out);
        adapter_inputs += p.in;  // bf16 weights: each adapter casts its input to fp32 and keeps it
    }
    if (e == 4) {  // fp32 weights: adapters share the one input their projections share
        adapter_inputs = 0;
        if (targeted("q_proj") || targeted("k_proj") || targeted("v_proj")) adapter_inputs += h;
        if (targeted("o_proj")) adapter_inputs += heads * d;
        if (targeted("gate_proj") || targeted("up_proj")) adapter_inputs += h;
        if (targeted("down_proj")) adapter_inputs += inter;
    }
    std::int64_t other = vocab * h * e * (c.tie_word_embeddings ? 1 : 2) + (2 * layers + 1) * h * e;
    if (c.qk_norm) other += 2 * d * layers * e;
    if (c.attention_bias) other += layers * (heads + 2 * kv_heads) * d * e;
    m.parts.emplace_back("weights: embeddings, head, norms", other);
    m.parts.emplace_back(plan.nf4 ? "weights: projections (NF4)" : "weights: projections",
                         layers * projection_bytes);
    m.parts.emplace_back("LoRA adapters, gradients, AdamW", layers * adapter_values * 16);

    // What one decoder layer keeps for backward.
    std::int64_t per_layer = 2 * tokens * h * 4;  // the two RMSNorms' fp32 inputs
    per_layer += tokens * adapter_inputs * 4;     // the adapters' fp32 inputs
    per_layer += 4 * tokens * heads * d * e;      // q, repeated k and v, attention output
    per_layer += heads * tokens * 4;              // attention's log-sum-exp
    if (c.qk_norm) per_layer += tokens * (heads + kv_heads) * d * 4;
    per_layer += 3 * tokens * inter * e;  // gate, up, silu(gate)
    // Backward's own tensors at its widest: the gradients of gate and up, and the residual
    // stream's fp32 gradient with the one being formed.
    const std::int64_t gradients = 2 * tokens * inter * e + 2 * tokens * h * 4;
    if (plan.gradient_checkpointing) {
        m.parts.emplace_back("activations: each layer's input", layers * tokens * h * e);
        m.parts.emplace_back("backward: one layer recomputed, gradients", per_layer + gradients);
    } else {
        m.parts.emplace_back("activations kept for backward", layers * per_layer);
        m.parts.emplace_back("backward: gradients", gradients);
    }
    // The fused head and loss: fp32 chunks of at most 4M logits (two buffers), the final
    // norm's fp32 input and the hidden states' fp32 gradient.
    const std::int64_t rows =
        std::min(tokens, std::max<std::int64_t>(1, (std::int64_t{4} << 20) / vocab));
    m.parts.emplace_back("head and loss (chunked)", 2 * rows * vocab * 4 + 2 * tokens * h * 4);
    if (plan.nf4) m.parts.emplace_back("NF4: largest projection dequantized", 2 * largest * e);
    m.notes.push_back("batch " + std::to_string(plan.batch) + " x " + std::to_string(plan.seq) +
                      " tokens, the longest a batch can be");
    return m;
}

}  // namespace crucible::llm
