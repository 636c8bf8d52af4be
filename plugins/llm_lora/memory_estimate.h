#pragma once
// The predicted peak memory of an llm.lora step (core/engine/memory_estimate.h), from what
// the decoder keeps, counted op by op as llama_model.cpp runs them:
// - weights: embeddings, head and norms in the weights' dtype; the projections in it too, or as
//   NF4 codes (4 bits a value, one byte a block of 64, four bytes a 16384 values);
// - adapters: fp32 matrices with their gradients and AdamW's two moments (16 bytes a value);
// - saved activations per decoder layer: each RMSNorm's fp32 input; each adapter's fp32 input
//   (one per adapted projection in bf16, where each casts its own; shared in fp32); attention's
//   q, k and v (k and v repeated to every query head) and its output; with q/k norms their fp32
//   inputs; the MLP's gate and up outputs and silu(gate); with gradient checkpointing only each
//   layer's input, plus one layer recomputed during backward;
// - backward's own gradients at their widest (gate's and up's, the residual stream's in fp32;
//   with checkpointing also the one layer recomputed), the fused head-and-loss chunks, and with
//   NF4 the largest projection dequantized (twice: the weight and the product being formed).
// Against LibTorch's live tensor bytes on the CPU the prediction lands within -10 % .. +25 %
// (checkpointed runs on the high, safe side); on a GPU the caching allocator's reserve comes
// on top (MemoryEstimate::fits keeps 10 % for it).
// Checked against measured peaks: on the CPU here for small configs (tests/llm_lora), on a GPU
// by tests/gpu/run.sh.
#include <torch/torch.h>

#include <cstdint>

#include "core/engine/memory_estimate.h"
#include "plugins/llm_lora/llama_model.h"

namespace crucible::llm {

struct LlmMemoryPlan {
    LlamaConfig config;
    torch::ScalarType dtype = torch::kBFloat16;  // the base weights' dtype
    bool nf4 = false;
    std::int64_t batch = 4;
    std::int64_t seq = 1024;  // tokens per sequence (cutoff_len: the longest a batch can be)
    LoraSpec lora;
    bool gradient_checkpointing = false;
};

engine::MemoryEstimate estimate_llm_memory(const LlmMemoryPlan& plan);

}  // namespace crucible::llm
