#include "plugins/llm_lora/generate.h"

#include "core/base/error.h"

namespace crucible::llm {

std::vector<std::int64_t> generate(LlamaForCausalLmImpl& model,
                                   const std::vector<std::int64_t>& prompt,
                                   const GenerateOptions& options) {
    if (prompt.empty()) throw InputError("prompt", "is empty");
    torch::NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    const auto device = model.model->embed_tokens->weight.device();
    auto gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);
    KvCache cache;
    std::vector<std::int64_t> out;
    torch::Tensor input = torch::tensor(prompt, torch::kLong).unsqueeze(0).to(device);
    const std::int64_t limit = model.config.max_position_embeddings;
    for (std::int64_t step = 0; step < options.max_new_tokens; ++step) {
        if (cache.length() + input.size(1) > limit) break;
        const torch::Tensor logits =
            model.forward(input, &cache).select(1, -1).squeeze(0).to(torch::kCPU);
        std::int64_t next;
        if (options.temperature <= 0) {
            next = logits.argmax().item<std::int64_t>();
        } else {
            torch::Tensor probs = torch::softmax(logits / options.temperature, -1);
            if (options.top_p < 1.0) {
                auto [sorted, idx] = probs.sort(-1, true);
                const torch::Tensor cum = sorted.cumsum(-1);
                // Keep the smallest prefix whose mass reaches top_p (the first token always).
                torch::Tensor drop = (cum - sorted) >= options.top_p;
                sorted = sorted.masked_fill(drop, 0);
                probs = torch::zeros_like(probs).scatter(0, idx, sorted);
            }
            next = torch::multinomial(probs, 1, false, gen).item<std::int64_t>();
        }
        out.push_back(next);
        if (options.eos_id && next == *options.eos_id) break;
        input =
            torch::full({1, 1}, next, torch::TensorOptions().dtype(torch::kLong).device(device));
    }
    if (was_training) model.train();
    return out;
}

}  // namespace crucible::llm
