// Checks that need a CUDA GPU, run by tests/gpu/run.sh on a GPU machine (never by ctest, which
// pins the suite to the CPU): the golden YOLO loss cases on CUDA against the CPU, autocast fp16
// and bf16 on CUDA, fused attention on CUDA against the plain formula, optimizer state moving
// between CUDA and the CPU on resume, the device order against NVML, and an out-of-memory on
// CUDA recognised by its type, and NF4 (QLoRA) quantized and dequantized on CUDA exactly as on
// the CPU, with the linear layer's gradient. Without a GPU every test says so and fails: run.sh
// does not run this binary then.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/base/environment.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/engine/autocast.h"
#include "core/engine/device.h"
#include "core/engine/device_memory.h"
#include "core/engine/device_upload.h"
#include "core/engine/nf4.h"
#include "core/engine/tensor_state.h"
#include "core/jobs/gpu_inventory.h"
#include "plugins/detect/loss/detection_loss.h"
#include "plugins/sd_lora/nn.h"

namespace {

using namespace crucible;

std::filesystem::path fixtures() {
    const auto env = crucible::environment_variable("CRUCIBLE_GPU_FIXTURES");
    return env ? crucible::path_from_utf8(*env) : std::filesystem::path(CRUCIBLE_FIXTURES_DIR);
}

class Gpu : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_TRUE(torch::cuda::is_available()) << "no CUDA device"; }
};

torch::Tensor read_f32(const SafetensorsFile& file, const std::string& name) {
    const auto& info = file.at(name);
    auto t = torch::empty(info.shape, torch::kFloat);
    const auto bytes = file.data(info);
    std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
    return t;
}

// [B2 8/8] On CUDA the codes are made and read back by LibTorch ops (dequantize_in_ops), on the
// CPU by a loop of its own: the same codes, the same values and input gradient to rounding.
TEST_F(Gpu, Nf4OnCudaGivesTheCpusCodesValuesAndGradients) {
    torch::manual_seed(21);
    const torch::Tensor w = torch::randn({384, 1000}).to(torch::kBFloat16);  // a short last block
    const auto cpu = engine::Nf4Tensor::quantize(w);
    const auto cuda = engine::Nf4Tensor::quantize(w.to(torch::kCUDA));
    // The 4-bit codes are exact; the block maxima's mean is a reduction whose order differs, so
    // the constants (and through them the values) may differ in their last bit.
    EXPECT_TRUE(torch::equal(cuda.packed.cpu(), cpu.packed));
    EXPECT_TRUE(torch::allclose(cuda.absmax().cpu(), cpu.absmax(), 1e-5, 1e-7));
    EXPECT_TRUE(torch::allclose(cuda.dequantize().cpu().to(torch::kFloat32),
                                cpu.dequantize().to(torch::kFloat32), 1e-2, 1e-3));
    const torch::Tensor x = torch::randn({4, 7, 1000}).to(torch::kBFloat16);
    const torch::Tensor xc = x.clone().requires_grad_(true), xg = x.cuda().requires_grad_(true);
    const torch::Tensor g = torch::randn({4, 7, 384}).to(torch::kBFloat16);
    engine::nf4_linear(xc, cpu).backward(g);
    engine::nf4_linear(xg, cuda).backward(g.cuda());
    const double scale = xc.grad().abs().max().item<double>();
    EXPECT_LT((xg.grad().cpu().to(torch::kFloat32) - xc.grad().to(torch::kFloat32))
                  .abs()
                  .max()
                  .item<double>(),
              0.02 * scale);  // bf16 products summed in another order
}

TEST_F(Gpu, GoldenYoloLossCasesOnCudaEqualTheCpu) {
    for (const std::string stem : {"loss_case", "loss_case2"}) {
        const auto file =
            SafetensorsFile::open(fixtures() / "yolov8" / (stem + "_inputs.safetensors"));
        std::vector<torch::Tensor> levels{read_f32(file, "feats_p3"), read_f32(file, "feats_p4"),
                                          read_f32(file, "feats_p5")};
        detect::DetectionTargets targets;
        targets.batch_index = read_f32(file, "batch_idx");
        targets.classes = read_f32(file, "cls");
        targets.boxes = read_f32(file, "bboxes_xywhn");
        detect::DetectionLoss loss{detect::DetectionLossOptions(4)};
        const auto cpu = loss(levels, targets).items;
        for (auto& l : levels)
            l = l.to(torch::kCUDA);
        const auto cuda = loss(levels, targets);  // targets move inside
        EXPECT_TRUE(cuda.total.is_cuda());
        const auto diff = (cuda.items.cpu() - cpu).abs() / cpu.abs().clamp_min(1e-6);
        EXPECT_LT(diff.max().item<double>(), 1e-4) << stem << ": " << cuda.items << " vs " << cpu;
        const Json expected = read_json_file(fixtures() / "yolov8" / (stem + "_expected.json"));
        EXPECT_NEAR(cuda.items[0].item<double>(), expected["loss_box"].get<double>(),
                    1e-4 * expected["loss_box"].get<double>());
    }
}

TEST_F(Gpu, AutocastOnCudaRunsProductsInHalfAndKeepsSoftmaxAndLossesFp32) {
    const auto x = torch::randn({8, 16}, torch::kCUDA), w = torch::randn({4, 16}, torch::kCUDA);
    for (const auto dtype : {torch::kFloat16, torch::kBFloat16}) {
        engine::AutocastGuard autocast({true, c10::DeviceType::CUDA, dtype});
        const auto y = torch::nn::functional::linear(x, w);
        EXPECT_EQ(y.scalar_type(), dtype);
        EXPECT_EQ(torch::softmax(y, -1).scalar_type(), torch::kFloat32);
        EXPECT_EQ(torch::binary_cross_entropy_with_logits(y, torch::rand_like(y)).scalar_type(),
                  torch::kFloat32);
    }
}

TEST_F(Gpu, FusedAttentionOnCudaEqualsThePlainFormula) {
    const auto q = torch::randn({2, 8, 1024, 40}, torch::kCUDA);
    const auto k = torch::randn({2, 8, 77, 40}, torch::kCUDA);
    const auto v = torch::randn({2, 8, 77, 40}, torch::kCUDA);
    const auto plain = torch::matmul(
        torch::softmax(torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(40.0), -1), v);
    EXPECT_LT((sd::attention(q, k, v) - plain).abs().max().item<double>(), 1e-4);
    engine::AutocastGuard autocast(engine::AutocastMode::cuda_fp16(true));
    const auto low = sd::attention(q.to(torch::kHalf), k.to(torch::kHalf), v.to(torch::kHalf));
    EXPECT_LT((low.to(torch::kFloat32) - plain).abs().max().item<double>(), 1e-2);
}

TEST_F(Gpu, OptimizerStateMovesBetweenCudaAndTheCpuOnResume) {
    torch::nn::Linear on_gpu(8, 4);
    on_gpu->to(torch::kCUDA);
    torch::optim::AdamW opt_gpu(on_gpu->parameters());
    on_gpu(torch::randn({3, 8}, torch::kCUDA)).sum().backward();
    opt_gpu.step();
    torch::nn::Linear on_cpu(8, 4);
    torch::optim::AdamW opt_cpu(on_cpu->parameters());
    engine::optimizer_from_bytes(opt_cpu, engine::optimizer_to_bytes(opt_gpu));
    for (const auto& [key, state] : opt_cpu.state())
        EXPECT_TRUE(static_cast<const torch::optim::AdamWParamState&>(*state).exp_avg().is_cpu());
    // And back: CPU state onto a CUDA model.
    torch::optim::AdamW again(on_gpu->parameters());
    engine::optimizer_from_bytes(again, engine::optimizer_to_bytes(opt_cpu));
    for (const auto& [key, state] : again.state())
        EXPECT_TRUE(static_cast<const torch::optim::AdamWParamState&>(*state).exp_avg().is_cuda());
    on_gpu(torch::randn({3, 8}, torch::kCUDA)).sum().backward();
    again.step();  // would throw on mixed devices
}

TEST_F(Gpu, CudaNumbersTheGpusAsNvmlDoes) {
    ASSERT_EQ(crucible::environment_variable("CUDA_DEVICE_ORDER").value_or(""), "PCI_BUS_ID")
        << "run.sh sets it, as the agent";
    const auto report = jobs::GpuInventory::open()->read();
    ASSERT_TRUE(report.nvml) << report.note;
    const auto uuids = engine::cuda_device_uuids();
    ASSERT_EQ(uuids.size(), report.gpus.size());
    for (std::size_t i = 0; i < uuids.size(); ++i) {
        if (report.gpus[i].mig_enabled) continue;  // CUDA lists the MIG slices instead
        EXPECT_EQ(uuids[i], report.gpus[i].uuid) << "CUDA device " << i;
        EXPECT_EQ(engine::choose_device(std::to_string(report.gpus[i].index)).device.index(),
                  static_cast<int>(i));
        EXPECT_EQ(engine::choose_device(report.gpus[i].uuid).device.index(), static_cast<int>(i));
    }
}

TEST_F(Gpu, OutOfMemoryOnCudaIsItsOwnTypeAndTheAllocatorSaysHowFull) {
    const auto before = engine::device_memory(torch::Device(torch::kCUDA, 0));
    ASSERT_TRUE(before.has_value());
    EXPECT_GT(before->dedicated, 0u);
    EXPECT_THROW((void)torch::empty({1LL << 50}, torch::kCUDA), c10::OutOfMemoryError);
    const auto big = torch::empty({1LL << 28}, torch::kCUDA);  // 1 GiB
    EXPECT_EQ(big.nbytes(), 1ull << 30);
    const auto after = engine::device_memory(torch::Device(torch::kCUDA, 0));
    EXPECT_GE(after->allocated, before->allocated + (1ull << 30));
    EXPECT_GE(after->reserved, after->allocated);
}

TEST_F(Gpu, BatchUploadGoesThroughPinnedMemoryOnASideStreamAndArrivesIntact) {
    engine::DeviceUpload upload(torch::Device(torch::kCUDA, 0));
    const auto host = torch::randint(0, 255, {4, 3, 64, 64}, torch::kUInt8);
    const auto boxes = torch::rand({5, 6});
    // Batch k is in use on the compute stream while batch k+1 is sent.
    const auto busy = torch::rand({2048, 2048}, torch::kCUDA);
    const auto work = busy.matmul(busy);
    const auto pixels = upload.start(host);
    const auto table = upload.start(boxes);
    upload.hand_over({pixels, table});
    EXPECT_TRUE(pixels.is_cuda());
    EXPECT_TRUE(torch::equal(pixels.cpu(), host));
    EXPECT_TRUE(torch::equal(table.cpu(), boxes));
    EXPECT_TRUE(torch::isfinite(work).all().item<bool>());
    // On the CPU nothing is copied.
    engine::DeviceUpload on_cpu(torch::Device(torch::kCPU));
    EXPECT_EQ(on_cpu.start(host).data_ptr(), host.data_ptr());
}

}  // namespace
