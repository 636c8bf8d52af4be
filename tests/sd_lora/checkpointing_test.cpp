// Gradient checkpointing of the UNet's ResNets and transformers and of the CLIP encoder layers:
// one training step's LoRA gradients equal those of a plain step (UNet LoRA alone, and with the
// text encoder's LoRA, whose text states then need a gradient inside the checkpointed blocks),
// dropout in the adapters included.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "plugins/sd_lora/block_checkpoint.h"
#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/scheduler.h"
#include "plugins/sd_lora/unet.h"

namespace crucible::sd {
namespace {

// One step of the task's loss (noised latents, text states, epsilon MSE) on tiny models; the
// gradients of every adapter parameter by name.
std::map<std::string, torch::Tensor> step_gradients(bool checkpointing, bool train_text) {
    torch::manual_seed(12);
    UNet unet(UNetConfig::tiny());
    ClipTextModel text(ClipTextConfig::tiny());
    for (auto* m : {static_cast<torch::nn::Module*>(unet.get()),
                    static_cast<torch::nn::Module*>(text.get())}) {
        for (auto& p : m->parameters())
            p.set_requires_grad(false);
        m->eval();
    }
    auto targets = unet_lora_targets(*unet);
    if (train_text) {
        const auto t = text_encoder_lora_targets(*text);
        targets.insert(targets.end(), t.begin(), t.end());
    }
    LoraNetwork net(targets, LoraOptions{4, 4, 0.1, false});
    {
        torch::NoGradGuard no_grad;
        for (auto& a : net->adapters)
            a->weights.up.normal_(0, 0.1);  // B = 0 would give the down matrices no gradient
    }
    net->train();
    net->install();
    unet->gradient_checkpointing = checkpointing;
    text->gradient_checkpointing = checkpointing;

    NoiseSchedule schedule;
    const auto latents = torch::randn({2, 4, 16, 16});
    const auto noise = torch::randn_like(latents);
    const auto t = torch::tensor({100, 700});
    const auto ids = torch::randint(0, 1000, {2, 77}, torch::kLong);
    torch::manual_seed(77);  // the adapters' dropout masks
    torch::Tensor context;
    if (train_text) {
        context = text->forward(ids);
    } else {
        torch::NoGradGuard no_grad;
        context = text->forward(ids);
    }
    const auto pred = unet->forward(schedule.add_noise(latents, noise, t), t, context);
    torch::mse_loss(pred, noise).backward();
    std::map<std::string, torch::Tensor> out;
    for (const auto& p : net->named_parameters())
        out[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : torch::Tensor();
    return out;
}

void expect_equal_gradients(bool train_text) {
    const auto plain = step_gradients(false, train_text);
    const auto ckpt = step_gradients(true, train_text);
    ASSERT_EQ(plain.size(), ckpt.size());
    std::size_t text_nonzero = 0;
    for (const auto& [name, g] : plain) {
        ASSERT_TRUE(g.defined()) << name;
        ASSERT_TRUE(ckpt.at(name).defined()) << name << " got no gradient when checkpointed";
        EXPECT_LT((g - ckpt.at(name)).abs().max().item<double>(), 1e-5) << name;
        if (name.rfind("lora_te_", 0) == 0 && g.abs().max().item<double>() > 0) ++text_nonzero;
    }
    if (train_text) {
        // 2 layers × 6 modules × (down, up): the text encoder's adapters all get gradients.
        EXPECT_EQ(text_nonzero, 24u);
    }
}

TEST(GradientCheckpointing, UNetLoraGradientsEqualAPlainStep) {
    expect_equal_gradients(false);
}

TEST(GradientCheckpointing, TextEncoderLoraGradientsEqualAPlainStep) {
    expect_equal_gradients(true);
}

TEST(GradientCheckpointing, BlocksThatCannotTrainRunPlainly) {
    torch::manual_seed(1);
    UNet unet(UNetConfig::tiny());
    for (auto& p : unet->parameters())
        p.set_requires_grad(false);
    EXPECT_FALSE(has_trainable_parameters(*unet));
    auto targets = unet_lora_targets(*unet);
    LoraNetwork net(targets, LoraOptions{});
    net->install();
    EXPECT_TRUE(has_trainable_parameters(*unet));
    net->uninstall();
    // No adapter installed, frozen input: nothing to recompute, and no gradient either.
    unet->gradient_checkpointing = true;
    const auto out =
        unet->forward(torch::randn({1, 4, 8, 8}), torch::tensor({10}), torch::randn({1, 77, 32}));
    EXPECT_FALSE(out.requires_grad());
}

}  // namespace
}  // namespace crucible::sd
