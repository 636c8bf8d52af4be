// SD LoRA on CPU with the tiny configs: one training iteration (UNet forward + backward through
// the LoRA adapters + AdamW step, batch 1) at 64 and 128 px, and the VAE encode that caches one
// image's latent. Peak resident memory is reported as a counter (ru_maxrss, whole process).
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <sys/resource.h>

#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/scheduler.h"
#include "plugins/sd_lora/unet.h"
#include "plugins/sd_lora/vae.h"

namespace crucible::sd {
namespace {

double peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void BM_TrainIteration(benchmark::State& state) {
    const std::int64_t px = state.range(0);
    torch::manual_seed(0);
    UNet unet(UNetConfig::tiny());
    for (auto& p : unet->parameters())
        p.set_requires_grad(false);
    LoraNetwork net(unet_lora_targets(*unet), LoraOptions{8, 8, 0, false});
    net->install();
    torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-4));
    NoiseSchedule schedule;
    const std::int64_t side = px / 2;  // the tiny VAE downsamples by 2
    const auto latents = torch::randn({1, 4, side, side});
    const auto ctx = torch::randn({1, 77, 32});
    for (auto _ : state) {
        const auto noise = torch::randn_like(latents);
        const auto t = torch::randint(0, 1000, {1}, torch::kLong);
        const auto pred = unet->forward(schedule.add_noise(latents, noise, t), t, ctx);
        const auto loss = torch::mse_loss(pred, noise);
        opt.zero_grad();
        loss.backward();
        opt.step();
        benchmark::DoNotOptimize(loss.item<float>());
    }
    state.counters["it/s"] =
        benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_TrainIteration)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CacheLatent(benchmark::State& state) {
    const std::int64_t px = state.range(0);
    torch::manual_seed(0);
    AutoencoderKL vae(VaeConfig::tiny());
    vae->eval();
    const auto image = torch::rand({1, 3, px, px}) * 2 - 1;
    torch::NoGradGuard no_grad;
    for (auto _ : state) {
        const Posterior p = vae->encode(image);
        benchmark::DoNotOptimize(p.mean.data_ptr());
    }
    state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_CacheLatent)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace crucible::sd

BENCHMARK_MAIN();
