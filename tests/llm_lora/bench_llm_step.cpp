// POSIX-only test: forks to keep two memory peaks apart and reads getrusage.
// Tokens/s of training steps (forward, loss, backward, AdamW) on a stories15M-sized Llama
// (dim 288, 6 layers, 6 heads, hidden 768, vocab 32000, seq 256), LoRA r=8 on q/v against full
// fine-tuning, and the peak resident memory of each (each mode runs in its own child process,
// so the peaks do not mix), and LoRA with gradient checkpointing (activations recomputed in
// backward). Prints the ratios measured in the same run.
//
//   bench_llm_step [steps=5] [batch=4] [seq=256] [threads=2] [device=cpu|cuda] [dtype=fp32|bf16]
//                  [profile=trace.json]
// profile= records one timed LoRA step with LibTorch's Kineto profiler as a Chrome trace (ops with
// their input shapes; tests/bench/reference/profile_table.py sums it per op) and measures nothing
// else. On CUDA the peak is the caching allocator's peak reserved memory, and the base weights may
// be bf16 (adapters stay fp32). The last line, "RESULT {json}", is for scripts.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/base/allocator.h"
#include "core/base/json.h"
#include "core/engine/device_memory.h"
#include "plugins/llm_lora/llama_model.h"

namespace {

using namespace crucible::llm;

struct Result {
    double tokens_per_s = 0;
    double peak_mb = 0;
    long long trainable = 0;
};

struct Setup {
    int steps = 5, batch = 4, seq = 256;
    std::string profile;  // a trace file: record the timed steps instead of timing them
    torch::Device device{torch::kCPU};
    torch::ScalarType dtype = torch::kFloat32;
};

Result run_mode(bool lora, bool checkpointing, const Setup& setup) {
    const int steps = setup.steps, batch = setup.batch, seq = setup.seq;
    LlamaConfig c;
    c.vocab_size = 32000;
    c.hidden_size = 288;
    c.intermediate_size = 768;
    c.num_hidden_layers = 6;
    c.num_attention_heads = 6;
    c.num_key_value_heads = 6;
    c.max_position_embeddings = 256;
    c.rms_norm_eps = 1e-5;
    torch::manual_seed(0);
    LlamaForCausalLm m(c);
    m->to(setup.device, setup.dtype);
    m->gradient_checkpointing = checkpointing;
    if (lora) {
        LoraSpec s;
        s.rank = 8;
        s.alpha = 16;
        m->add_lora(s);
    }
    std::vector<torch::Tensor> params;
    Result r;
    for (auto& p : m->parameters())
        if (p.requires_grad()) {
            params.push_back(p);
            r.trainable += p.numel();
        }
    torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-4));
    const auto tokens =
        torch::randint(0, c.vocab_size, {batch, seq}, torch::kLong).to(setup.device);
    auto step = [&] {
        opt.zero_grad();
        m->loss(tokens, tokens).backward();
        opt.step();
    };
    auto wait = [&] {
        if (setup.device.is_cuda()) torch::cuda::synchronize();
    };
    step();  // warm-up
    wait();
    if (!setup.profile.empty()) {
        namespace profiler = torch::autograd::profiler;
        using torch::profiler::impl::ActivityType;
        const torch::profiler::impl::ProfilerConfig config(
            torch::profiler::impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
        profiler::prepareProfiler(config, {ActivityType::CPU});
        profiler::enableProfiler(config, {ActivityType::CPU});
        step();
        wait();
        profiler::disableProfiler()->save(setup.profile);
        return r;
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i)
        step();
    wait();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.tokens_per_s = static_cast<double>(steps) * batch * seq / s;
    if (const auto memory = crucible::engine::device_memory(setup.device)) {
        r.peak_mb = static_cast<double>(memory->peak_reserved) / (1u << 20);
        return r;
    }
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    r.peak_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
    return r;
}

Result in_child(bool lora, bool checkpointing, const Setup& setup) {
    int fd[2];
    if (pipe(fd) != 0) std::abort();
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        const Result r = run_mode(lora, checkpointing, setup);
        if (write(fd[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(1);
        _exit(0);
    }
    close(fd[1]);
    Result r;
    if (read(fd[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r))
        std::fprintf(stderr, "child failed\n");
    close(fd[0]);
    waitpid(pid, nullptr, 0);
    return r;
}

int arg(int argc, char** argv, const char* key, int def) {
    const std::string k = std::string(key) + "=";
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind(k, 0) == 0) return std::atoi(argv[i] + k.size());
    return def;
}

}  // namespace

std::string text_arg(int argc, char** argv, const char* key, const char* def) {
    const std::string k = std::string(key) + "=";
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind(k, 0) == 0) return argv[i] + k.size();
    return def;
}

int main(int argc, char** argv) {
    Setup setup;
    setup.steps = arg(argc, argv, "steps", 5);
    setup.batch = arg(argc, argv, "batch", 4);
    setup.seq = arg(argc, argv, "seq", 256);
    const int threads = arg(argc, argv, "threads", 2);
    const std::string device = text_arg(argc, argv, "device", "cpu");
    const std::string dtype = text_arg(argc, argv, "dtype", "fp32");
    if (device == "cuda") setup.device = torch::Device(torch::kCUDA, 0);
    if (dtype == "bf16") setup.dtype = torch::kBFloat16;
    torch::set_num_threads(threads);
    crucible::keep_freed_memory_for_reuse();  // as training does (core/engine/trainer.cpp)
    setup.profile = text_arg(argc, argv, "profile", "");
    if (!setup.profile.empty()) {
        run_mode(/*lora=*/true, /*checkpointing=*/false, setup);
        std::printf("wrote the trace of one LoRA step to %s\n", setup.profile.c_str());
        return 0;
    }
    std::printf(
        "stories15M-sized Llama, batch %d x seq %d, %d steps, %d threads, %s, %s weights, fused "
        "attention\n",
        setup.batch, setup.seq, setup.steps, threads, device.c_str(), dtype.c_str());
    // Each mode in a child process: peaks do not mix (CUDA starts in each child, never here).
    const Result lora = in_child(true, false, setup);
    const Result full = in_child(false, false, setup);
    const Result lora_ckpt = in_child(true, true, setup);
    const char* peak = setup.device.is_cuda() ? "peak reserved" : "peak RSS";
    std::printf("LoRA r=8 (q,v): %9.0f tokens/s  %s %7.1f MB  trainable %lld\n", lora.tokens_per_s,
                peak, lora.peak_mb, lora.trainable);
    std::printf("full fine-tune: %9.0f tokens/s  %s %7.1f MB  trainable %lld\n", full.tokens_per_s,
                peak, full.peak_mb, full.trainable);
    std::printf("LoRA + gradient checkpointing: %9.0f tokens/s  %s %7.1f MB\n",
                lora_ckpt.tokens_per_s, peak, lora_ckpt.peak_mb);
    std::printf("LoRA / full: speed x%.2f, peak memory x%.2f\n",
                lora.tokens_per_s / full.tokens_per_s, lora.peak_mb / full.peak_mb);
    std::printf("LoRA checkpointed / LoRA: speed x%.2f, peak memory x%.2f\n",
                lora_ckpt.tokens_per_s / lora.tokens_per_s, lora_ckpt.peak_mb / lora.peak_mb);
    const crucible::Json result = {{"device", device},
                                   {"dtype", dtype},
                                   {"lora_tokens_s", lora.tokens_per_s},
                                   {"lora_peak_mb", lora.peak_mb},
                                   {"full_tokens_s", full.tokens_per_s},
                                   {"full_peak_mb", full.peak_mb},
                                   {"lora_checkpointed_tokens_s", lora_ckpt.tokens_per_s},
                                   {"lora_checkpointed_peak_mb", lora_ckpt.peak_mb}};
    std::printf("RESULT %s\n", result.dump().c_str());
    return 0;
}
