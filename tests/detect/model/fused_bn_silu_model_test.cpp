// The whole YOLOv8n training step with the Conv blocks' batch norm + SiLU fused
// (core/engine/bn_silu.h) against the same step with LibTorch's two modules: the outputs, every
// parameter's gradient through the real loss, and every BatchNorm's running statistics, from the
// same weights and images.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "core/engine/bn_silu.h"
#include "core/engine/bn_silu_simd.h"
#include "core/engine/fused_kernels.h"
#include "plugins/detect/loss/detection_loss.h"
#include "plugins/detect/model/yolo_model.h"

namespace {

using namespace crucible;
using namespace crucible::detect;

struct StepResult {
    std::vector<torch::Tensor> levels;
    torch::OrderedDict<std::string, torch::Tensor> grads, buffers;
    double loss = 0;
};

DetectionTargets targets(int64_t batch) {
    DetectionTargets t;
    t.batch_index = torch::arange(batch).repeat_interleave(3).to(torch::kFloat32);
    t.classes = torch::randint(0, 4, {batch * 3}).to(torch::kFloat32);
    auto wh = torch::rand({batch * 3, 2}) * 0.3 + 0.1;
    t.boxes = torch::cat({wh / 2 + torch::rand({batch * 3, 2}) * (1 - wh), wh}, 1);
    return t;
}

StepResult step(bool fused, int64_t imgsz, int steps) {
    engine::set_fused_cpu_kernels_enabled(fused);
    torch::manual_seed(5);
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), 4));
    model->train();
    model->set_memory_format(torch::MemoryFormat::ChannelsLast);
    DetectionLoss loss{DetectionLossOptions(4)};
    const auto images =
        torch::rand({4, 3, imgsz, imgsz}).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto t = targets(4);
    StepResult r;
    for (int s = 0; s < steps; ++s) {
        model->zero_grad();
        r.levels = model->forward_levels(images);
        auto total = loss(r.levels, t).total;
        total.backward();
        r.loss = total.item<double>();
    }
    for (const auto& p : model->named_parameters())
        if (p.value().grad().defined()) r.grads.insert(p.key(), p.value().grad().clone());
    for (const auto& b : model->named_buffers())
        r.buffers.insert(b.key(), b.value().clone());
    engine::set_fused_cpu_kernels_enabled(true);
    return r;
}

double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
    const auto fa = a.to(torch::kFloat64), fb = b.to(torch::kFloat64);
    return (fa - fb).abs().max().item<double>() / (fb.abs().max().item<double>() + 1e-12);
}

}  // namespace

TEST(FusedBnSiluModel, TrainingStepEqualsTheUnfusedStep) {
    if (!engine::bn_silu_avx512_available(16))
        GTEST_SKIP() << "no AVX-512 on this CPU: both runs would take LibTorch's ops";
    for (const int64_t imgsz : {64, 128}) {
        const StepResult fused = step(true, imgsz, 2);
        const StepResult plain = step(false, imgsz, 2);
        const std::string at = "imgsz " + std::to_string(imgsz) + ": ";
        EXPECT_NEAR(fused.loss, plain.loss, 1e-4 * std::abs(plain.loss)) << at;
        for (size_t i = 0; i < plain.levels.size(); ++i)
            EXPECT_LT(relative_difference(fused.levels[i], plain.levels[i]), 1e-4)
                << at << "level " << i;
        ASSERT_EQ(fused.grads.size(), plain.grads.size()) << at;
        for (const auto& g : plain.grads) {
            const torch::Tensor* other = fused.grads.find(g.key());
            ASSERT_NE(other, nullptr) << at << g.key();
            EXPECT_LT(relative_difference(*other, g.value()), 2e-3) << at << "grad " << g.key();
        }
        for (const auto& b : plain.buffers) {
            const torch::Tensor* other = fused.buffers.find(b.key());
            ASSERT_NE(other, nullptr) << at << b.key();
            EXPECT_LT(relative_difference(*other, b.value()), 1e-4) << at << "buffer " << b.key();
        }
    }
}
