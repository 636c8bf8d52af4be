// SD LoRA on CPU with the tiny configs: training iterations (UNet forward + backward through the
// LoRA adapters + AdamW step, batch 1) at 64 and 128 px, with and without gradient checkpointing,
// and the VAE encode that caches one image's latent. Memory is the peak of live tensor bytes,
// counted by a wrapper around LibTorch's CPU allocator: exact for each case, where the process's
// resident peak only grows and would mix them. "step" is that peak less what was live before the
// step (weights, optimizer state): activations, gradients and temporaries. Prints the ratios
// checkpointed / plain measured in the same run, the cases alternating.
//
//   bench_sd_lora [steps=5] [rounds=2] [threads=2] [train=1 (0: only the VAE encode)]
#include <torch/torch.h>

#include <c10/core/CPUAllocator.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/scheduler.h"
#include "plugins/sd_lora/unet.h"
#include "plugins/sd_lora/vae.h"

namespace {

using namespace crucible::sd;

// Counts the bytes of live CPU tensors. The blocks keep the default allocator's layout (context =
// data, one raw deleter), so code that frees through the raw interface still works.
class CountingAllocator final : public c10::Allocator {
  public:
    explicit CountingAllocator(c10::Allocator* base)
        : base_(base), base_free_(base->raw_deleter()) {
        if (!base_free_) std::abort();
    }
    c10::DataPtr allocate(size_t n) const override {
        c10::DataPtr inner = base_->allocate(n);
        const c10::Device device = inner.device();
        void* p = inner.release_context();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            sizes_[p] = n;
            live_ += n;
            if (live_ > peak_) peak_ = live_;
        }
        return {p, p, &CountingAllocator::release, device};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &CountingAllocator::release; }

    static CountingAllocator& instance() {
        // Never destroyed: tensors in other statics are freed after main returns.
        static auto* a = new CountingAllocator(c10::GetDefaultCPUAllocator());
        return *a;
    }
    std::size_t live() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return live_;
    }
    std::size_t peak() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return peak_;
    }
    void reset_peak() {
        std::lock_guard<std::mutex> lock(mutex_);
        peak_ = live_;
    }

  private:
    static void release(void* p) {
        auto& a = instance();
        {
            std::lock_guard<std::mutex> lock(a.mutex_);
            const auto it = a.sizes_.find(p);
            if (it != a.sizes_.end()) {
                a.live_ -= it->second;
                a.sizes_.erase(it);
            }
        }
        a.base_free_(p);
    }
    c10::Allocator* base_;
    c10::DeleterFnPtr base_free_;
    mutable std::mutex mutex_;
    mutable std::unordered_map<void*, std::size_t> sizes_;
    mutable std::size_t live_ = 0, peak_ = 0;
};

double mb(std::size_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

struct Result {
    double it_per_s = 0;
    double peak_mb = 0, step_mb = 0;
};

Result train_iterations(std::int64_t px, bool checkpointing, int steps) {
    auto& counter = CountingAllocator::instance();
    torch::manual_seed(0);
    UNet unet(UNetConfig::tiny());
    for (auto& p : unet->parameters())
        p.set_requires_grad(false);
    unet->gradient_checkpointing = checkpointing;
    LoraNetwork net(unet_lora_targets(*unet), LoraOptions{8, 8, 0, false});
    net->install();
    torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-4));
    NoiseSchedule schedule;
    const std::int64_t side = px / 2;  // the tiny VAE downsamples by 2
    const auto latents = torch::randn({1, 4, side, side});
    const auto ctx = torch::randn({1, 77, 32});
    auto step = [&] {
        const auto noise = torch::randn_like(latents);
        const auto t = torch::randint(0, 1000, {1}, torch::kLong);
        const auto pred = unet->forward(schedule.add_noise(latents, noise, t), t, ctx);
        const auto loss = torch::mse_loss(pred, noise);
        opt.zero_grad();
        loss.backward();
        opt.step();
        return loss.item<float>();
    };
    step();  // warm-up; creates the optimizer state
    opt.zero_grad();
    const std::size_t before = counter.live();
    counter.reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i)
        step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Result r;
    r.it_per_s = static_cast<double>(steps) / s;
    r.peak_mb = mb(counter.peak());
    r.step_mb = mb(counter.peak() - before);
    return r;
}

Result cache_latent(std::int64_t px, int steps) {
    auto& counter = CountingAllocator::instance();
    torch::manual_seed(0);
    AutoencoderKL vae(VaeConfig::tiny());
    vae->eval();
    const auto image = torch::rand({1, 3, px, px}) * 2 - 1;
    torch::NoGradGuard no_grad;
    if (!vae->encode(image).mean.defined()) std::abort();  // warm-up
    const std::size_t before = counter.live();
    counter.reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
        const Posterior p = vae->encode(image);
        if (!p.mean.defined()) std::abort();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Result r;
    r.it_per_s = static_cast<double>(steps) / s;
    r.peak_mb = mb(counter.peak());
    r.step_mb = mb(counter.peak() - before);
    return r;
}

int arg(int argc, char** argv, const char* key, int def) {
    const std::string k = std::string(key) + "=";
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind(k, 0) == 0) return std::atoi(argv[i] + k.size());
    return def;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
    // As the SD tests do (sd_test_util.cpp): blocks up to 32 MB from the heap, not a fresh mmap
    // each (whose page faults dominate on virtual machines and would favour whichever case
    // allocates less, not the one that computes less). Larger blocks (the 128-px attention
    // scores) are still mapped per allocation.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
    c10::SetCPUAllocator(&CountingAllocator::instance(), /*priority=*/100);
    const int steps = arg(argc, argv, "steps", 5), threads = arg(argc, argv, "threads", 2);
    const int rounds = arg(argc, argv, "rounds", 2), train = arg(argc, argv, "train", 1);
    torch::set_num_threads(threads);
    std::printf(
        "tiny SD UNet (channels 32, 64), LoRA r=8 on 72 modules, batch 1, AdamW; %d steps "
        "per case, best of %d rounds, %d threads\n",
        steps, rounds, threads);
    for (const std::int64_t px : {64, 128}) {
        if (!train) break;
        // The cases alternate, `rounds` times; the fastest round of each counts (the machine may
        // be shared: a slow round is someone else's load, not the case's).
        Result plain, ckpt;
        for (int round = 0; round < rounds; ++round) {
            for (const bool checkpointing : {false, true}) {
                const Result r = train_iterations(px, checkpointing, steps);
                Result& best = checkpointing ? ckpt : plain;
                if (r.it_per_s > best.it_per_s) best = r;
            }
        }
        std::printf("%3lld px  plain:        %7.2f it/s  peak %7.1f MB  step %7.1f MB\n",
                    static_cast<long long>(px), plain.it_per_s, plain.peak_mb, plain.step_mb);
        std::printf("%3lld px  checkpointed: %7.2f it/s  peak %7.1f MB  step %7.1f MB\n",
                    static_cast<long long>(px), ckpt.it_per_s, ckpt.peak_mb, ckpt.step_mb);
        std::printf("%3lld px  checkpointed / plain: speed x%.2f, peak x%.2f, step memory x%.2f\n",
                    static_cast<long long>(px), ckpt.it_per_s / plain.it_per_s,
                    ckpt.peak_mb / plain.peak_mb, ckpt.step_mb / plain.step_mb);
    }
    for (const std::int64_t px : {64, 128}) {
        const Result r = cache_latent(px, steps);
        std::printf("%3lld px  VAE encode (latent cache): %7.2f images/s  peak %7.1f MB\n",
                    static_cast<long long>(px), r.it_per_s, r.peak_mb);
    }
    return 0;
}
