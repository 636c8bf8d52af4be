// A fresh process for memory figures that earlier work in the test process would blur:
//
//   llama_load_probe FOLDER fp32|bf16|nf4|nf4-bf16
//       loads a Llama folder on the CPU as the llm.lora task does (load_base_model) and prints
//       how far the resident size rose above where it stood before ("peak_mb=<MB>");
//   llama_load_probe FOLDER fp32|bf16|nf4|nf4-bf16 train BATCH SEQ [checkpointing]
//       then adds LoRA (r 16, every projection), takes two training steps (forward, loss,
//       backward, AdamW) on BATCH x SEQ random tokens, and prints the peak of live tensor bytes
//       ("tensor_peak_mb=", counted by an allocator in front of LibTorch's CPU allocator, the
//       figure a GPU's caching allocator reports as allocated) and the peak resident size above
//       the start ("peak_mb=": glibc's freed-but-kept memory on top) beside the prediction of
//       estimate_llm_memory ("predicted_mb=").
// nf4 quantizes the projections and keeps the rest in fp32; nf4-bf16 keeps the rest in bf16.
// Read by load_memory_test.cpp.
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/process_info.h"
#include "plugins/llm_lora/llama_load.h"
#include "plugins/llm_lora/memory_estimate.h"
#include "tests/support/counting_allocator.h"

int main(int argc, char** argv) {
    using namespace crucible;
    const bool train = argc >= 6 && std::string(argv[3]) == "train";
    if (argc != 3 && !train) {
        std::fprintf(stderr,
                     "usage: llama_load_probe FOLDER fp32|bf16|nf4|nf4-bf16 [train BATCH SEQ "
                     "[checkpointing]]\n");
        return 2;
    }
    try {
        const std::string mode = argv[2];
        llm::BaseModelLoad how;
        how.nf4 = mode.rfind("nf4", 0) == 0;
        how.dtype = mode == "fp32" || mode == "nf4" ? torch::kFloat32 : torch::kBFloat16;
        torch::set_num_threads(2);
        auto& counting = test_support::CountingAllocator::install();
        torch::ones({1});  // LibTorch's own start-up memory stays out of the figure
        const std::int64_t start = resident_bytes();
        reset_peak_resident_bytes();
        auto model = llm::load_base_model(path_from_utf8(argv[1]), how);
        if (train) {
            llm::LlmMemoryPlan plan;
            plan.config = model->config;
            plan.dtype = how.dtype;
            plan.nf4 = how.nf4;
            plan.batch = std::atoi(argv[4]);
            plan.seq = std::atoi(argv[5]);
            plan.gradient_checkpointing = argc >= 7 && std::string(argv[6]) == "checkpointing";
            plan.lora.rank = 16;
            plan.lora.alpha = 32;
            plan.lora.targets = llm::lora_target_names();
            model->add_lora(plan.lora);
            model->gradient_checkpointing = plan.gradient_checkpointing;
            model->train();
            std::vector<torch::Tensor> params;
            for (auto& p : model->parameters())
                if (p.requires_grad()) params.push_back(p);
            torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-4));
            torch::manual_seed(1);
            const auto tokens =
                torch::randint(0, plan.config.vocab_size, {plan.batch, plan.seq}, torch::kLong);
            for (int step = 0; step < 2; ++step) {
                opt.zero_grad();
                model->loss(tokens, tokens).backward();
                opt.step();
            }
            std::printf("tensor_peak_mb=%.1f\n", static_cast<double>(counting.peak()) / (1 << 20));
            std::printf("predicted_mb=%.1f\n",
                        static_cast<double>(llm::estimate_llm_memory(plan).total()) / (1 << 20));
        }
        std::printf("peak_mb=%.1f\n",
                    static_cast<double>(peak_resident_bytes() - start) / (1 << 20));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llama_load_probe: %s\n", e.what());
        return 1;
    }
}
