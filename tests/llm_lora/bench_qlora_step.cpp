// One LoRA or QLoRA training setup of a 1B-class Llama, measured in this process (run it once
// per mode: peaks must not mix; tests/bench/reference/qlora_compare.py runs both modes beside
// PEFT's and prints the ratios).
//
//   bench_qlora_step mode=lora|qlora [steps=2] [batch=1] [seq=256] [threads=2] [layers=22]
//                    [device=cpu|cuda] [hidden=2048] [intermediate=5632] [heads=32]
//                    [kv_heads=4] [vocab=32000]
//
// The model has TinyLlama-1.1B's shapes by default (hidden 2048, MLP 5632, 22 layers, 32 heads,
// 4 KV heads, vocab 32000, untied head) with random bf16 weights, filled one tensor at a time
// as the loader does (with mode=qlora each projection becomes NF4 codes as soon as it is made,
// so the dense model never exists). LoRA r=16, alpha=32, on every projection, no dropout; one
// warm-up step, then `steps` timed steps of forward, loss, backward and AdamW on the adapters.
// Prints tokens/s, the weights' bytes (parameters plus NF4 codes), the peak resident size above
// the process's size before the model was made (on CUDA the allocator's peak reserved memory)
// and, last, "RESULT {json}".
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/base/allocator.h"
#include "core/base/json.h"
#include "core/base/process_info.h"
#include "core/engine/device_memory.h"
#include "plugins/llm_lora/llama_model.h"
#include "plugins/llm_lora/memory_estimate.h"

namespace {

using namespace crucible::llm;

std::string text_arg(int argc, char** argv, const char* key, const char* def) {
    const std::string k = std::string(key) + "=";
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind(k, 0) == 0) return argv[i] + k.size();
    return def;
}

int int_arg(int argc, char** argv, const char* key, int def) {
    return std::atoi(text_arg(argc, argv, key, std::to_string(def).c_str()).c_str());
}

// Random weights of realistic scale, made in bf16 on the device tensor by tensor; projections
// quantized at once with nf4.
void fill_random(LlamaForCausalLmImpl& model, torch::Device device, bool nf4) {
    torch::NoGradGuard no_grad;
    const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
    std::map<std::string, LoraLinear> projections;
    for (auto& [name, proj] : model.projections())
        projections.emplace(name + ".weight", proj);
    for (auto& [name, param] : model.base_state_dict()) {
        if (param.dim() == 1) {
            param.set_data(torch::ones(param.sizes(), bf16));
            continue;
        }
        const auto proj = projections.find(name);
        const bool quantize = nf4 && proj != projections.end();
        if (quantize) proj->second->reserve_nf4(device);  // codes first, as the loader does
        torch::Tensor w = torch::randn(param.sizes(), bf16).div_(std::sqrt(param.size(1)));
        if (quantize)
            proj->second->quantize_nf4_from(w, torch::kBFloat16);
        else
            param.set_data(w);
    }
    model.to(device);  // buffers
}

std::int64_t weight_bytes(LlamaForCausalLmImpl& model) {
    std::int64_t bytes = 0;
    for (const auto& p : model.parameters())
        bytes += p.numel() * static_cast<std::int64_t>(p.element_size());
    for (auto& [name, proj] : model.projections())
        bytes += proj->nf4.storage_bytes();
    return bytes;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = text_arg(argc, argv, "mode", "");
    if (mode != "lora" && mode != "qlora") {
        std::fprintf(stderr, "usage: bench_qlora_step mode=lora|qlora [steps=2] [batch=1] ...\n");
        return 2;
    }
    const int steps = int_arg(argc, argv, "steps", 2);
    const int batch = int_arg(argc, argv, "batch", 1);
    const int seq = int_arg(argc, argv, "seq", 256);
    torch::set_num_threads(int_arg(argc, argv, "threads", 2));
    const torch::Device device(text_arg(argc, argv, "device", "cpu") == "cuda" ? torch::kCUDA
                                                                               : torch::kCPU);
    crucible::keep_freed_memory_for_reuse();  // as training does

    LlamaConfig c;
    c.vocab_size = int_arg(argc, argv, "vocab", 32000);
    c.hidden_size = int_arg(argc, argv, "hidden", 2048);
    c.intermediate_size = int_arg(argc, argv, "intermediate", 5632);
    c.num_hidden_layers = int_arg(argc, argv, "layers", 22);
    c.num_attention_heads = int_arg(argc, argv, "heads", 32);
    c.num_key_value_heads = int_arg(argc, argv, "kv_heads", 4);
    c.max_position_embeddings = 2048;
    c.rms_norm_eps = 1e-5;
    torch::manual_seed(0);
    torch::ones({1}).to(device);  // LibTorch (and CUDA) started: their memory is the baseline
    const std::int64_t baseline = crucible::resident_bytes();
    LlamaForCausalLm m(c, WeightInit::Empty);
    fill_random(*m, device, mode == "qlora");
    const std::int64_t weights = weight_bytes(*m);
    LoraSpec spec;
    spec.rank = 16;
    spec.alpha = 32;
    spec.targets = lora_target_names();
    m->add_lora(spec);
    m->train();
    LlmMemoryPlan plan;
    plan.config = c;
    plan.dtype = torch::kBFloat16;
    plan.nf4 = mode == "qlora";
    plan.batch = batch;
    plan.seq = seq;
    plan.lora = spec;
    const double predicted_mb = static_cast<double>(estimate_llm_memory(plan).total()) / (1 << 20);

    std::vector<torch::Tensor> params;
    std::int64_t trainable = 0;
    for (auto& p : m->parameters())
        if (p.requires_grad()) {
            params.push_back(p);
            trainable += p.numel();
        }
    torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-4));
    const auto tokens = torch::randint(0, c.vocab_size, {batch, seq}, torch::kLong).to(device);
    auto step = [&] {
        opt.zero_grad();
        m->loss(tokens, tokens).backward();
        opt.step();
        if (device.is_cuda()) torch::cuda::synchronize();
    };
    double dequantize_ms = 0;  // one dequantize of the largest projection (gate_proj)
    if (mode == "qlora") {
        auto gate = m->projections()[4].second;
        gate->base_weight();
        const auto d0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 10; ++i)
            gate->base_weight();
        dequantize_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - d0)
                .count() /
            10;
    }
    step();  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i)
        step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double tokens_per_s = static_cast<double>(steps) * batch * seq / s;
    double peak_mb = static_cast<double>(crucible::peak_resident_bytes() - baseline) / (1 << 20);
    if (const auto memory = crucible::engine::device_memory(device))
        peak_mb = static_cast<double>(memory->peak_reserved) / (1 << 20);

    std::printf("%s: %d layers, hidden %lld, batch %d x seq %d, %d steps on %s\n", mode.c_str(),
                static_cast<int>(c.num_hidden_layers), static_cast<long long>(c.hidden_size), batch,
                seq, steps, device.str().c_str());
    std::printf("%s: %.1f tokens/s, weights %.1f MB, peak %s %.1f MB, trainable %lld\n",
                mode.c_str(), tokens_per_s, static_cast<double>(weights) / (1 << 20),
                device.is_cuda() ? "reserved" : "RSS", peak_mb, static_cast<long long>(trainable));
    std::printf("%s: predicted peak %.1f MB (measured / predicted %.2f)\n", mode.c_str(),
                predicted_mb, peak_mb / predicted_mb);
    if (mode == "qlora")
        std::printf("qlora: dequantizing gate_proj (%lld values) takes %.2f ms\n",
                    static_cast<long long>(c.hidden_size * c.intermediate_size), dequantize_ms);
    const crucible::Json result = {{"side", "crucible"},
                                   {"mode", mode},
                                   {"device", device.str()},
                                   {"tokens_s", tokens_per_s},
                                   {"weights_mb", static_cast<double>(weights) / (1 << 20)},
                                   {"peak_mb", peak_mb},
                                   {"dequantize_ms", dequantize_ms},
                                   {"predicted_mb", predicted_mb},
                                   {"trainable", trainable}};
    std::printf("RESULT %s\n", result.dump().c_str());
    return 0;
}
