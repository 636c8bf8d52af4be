// Pretrained Ultralytics weights mapped onto Crucible's YOLOv8: the reference checkpoint's eval
// output is reproduced, and a new class head keeps every other weight.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/safetensors.h"
#include "core/engine/pt/pt_checkpoint.h"
#include "plugins/detect/pretrained/pretrained.h"

namespace fs = std::filesystem;
using namespace crucible;
using namespace crucible::detect;

namespace {

fs::path fixture(const std::string& name) {
    return fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / name;
}

torch::Tensor f32_tensor(const SafetensorsFile& file, const std::string& name) {
    const SafetensorsTensorInfo& info = file.at(name);
    EXPECT_EQ(info.dtype, SafetensorsDtype::F32) << name;
    torch::Tensor t = torch::empty(info.shape, torch::kFloat);
    const auto bytes = file.data(info);
    EXPECT_EQ(bytes.size(), static_cast<std::size_t>(t.numel()) * sizeof(float));
    std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
    return t;
}

const engine::PtCheckpoint& reference_checkpoint() {
    static const engine::PtCheckpoint ck =
        engine::read_pt_checkpoint(fixture("yolov8n_shapes11.pt"));
    return ck;
}

}  // namespace

TEST(Pretrained, ReferenceCheckpointReproducesTheReferenceEvalOutput) {
    const engine::PtCheckpoint& ck = reference_checkpoint();
    DetectionModel model = model_from_pretrained(ck, "yolov8n_shapes11.pt");
    EXPECT_EQ(model->num_classes(), 4);
    model->eval();
    const SafetensorsFile expected =
        SafetensorsFile::open(fixture("yolov8n_shapes11_expected.safetensors"));
    const torch::Tensor input = f32_tensor(expected, "input_rgb01_nchw");
    const torch::Tensor want = f32_tensor(expected, "output");
    ASSERT_EQ(want.sizes().vec(), (std::vector<int64_t>{2, 8, 2100}));
    torch::NoGradGuard no_grad;
    const torch::Tensor got = model->forward(input).decoded;
    ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
    const double box_err = (got.narrow(1, 0, 4) - want.narrow(1, 0, 4)).abs().max().item<double>();
    const double score_err =
        (got.narrow(1, 4, 4) - want.narrow(1, 4, 4)).abs().max().item<double>();
    std::printf("max abs error: boxes %.3g px, scores %.3g\n", box_err, score_err);
    EXPECT_LT(box_err, 1e-3);
    EXPECT_LT(score_err, 1e-4);
}

TEST(Pretrained, NewHeadKeepsEveryWeightButTheClassOutputs) {
    const engine::PtCheckpoint& ck = reference_checkpoint();
    PretrainedLoadReport report;
    DetectionModel model = model_from_pretrained_new_head(ck, 7, "ref.pt", &report);
    EXPECT_EQ(model->num_classes(), 7);
    // 3 levels x (weight, bias) of the class-logit convs; nc 7 < 100 keeps c3, so nothing else.
    ASSERT_EQ(report.reinitialized.size(), 6u);
    for (const auto& name : report.reinitialized)
        EXPECT_NE(name.find("model.22.cv3."), std::string::npos) << name;
    EXPECT_EQ(report.loaded.size() + report.reinitialized.size(), ck.state_dict.size());
    std::map<std::string, torch::Tensor> params;
    for (const auto& p : model->named_parameters())
        params[p.key()] = p.value();
    for (const auto& b : model->named_buffers())
        params[b.key()] = b.value();
    for (const auto& name : report.loaded) {
        const torch::Tensor* src = ck.find(name);
        ASSERT_NE(src, nullptr) << name;
        EXPECT_TRUE(torch::equal(params.at(name), src->to(params.at(name).scalar_type()))) << name;
    }
    EXPECT_EQ(params.at("model.22.cv3.0.2.weight").size(0), 7);
    // Same class count: nothing re-initialised.
    PretrainedLoadReport same;
    model_from_pretrained_new_head(ck, 4, "ref.pt", &same);
    EXPECT_TRUE(same.reinitialized.empty());
    EXPECT_EQ(same.loaded.size(), ck.state_dict.size());
}

TEST(Pretrained, MismatchedCheckpointsAreRefusedByName) {
    engine::PtCheckpoint ck = reference_checkpoint();
    ck.scale = "s";  // weights of an n model announced as s
    try {
        model_from_pretrained(ck, "wrong.pt");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("wrong.pt: checkpoint does not match"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("model.0.conv.weight"), std::string::npos) << e.what();
    }
    engine::PtCheckpoint missing = reference_checkpoint();
    missing.state_dict.erase(missing.state_dict.begin() + 3);
    EXPECT_THROW(model_from_pretrained(missing, "missing.pt"), InputError);
    engine::PtCheckpoint unknown = reference_checkpoint();
    unknown.scale.clear();
    EXPECT_THROW(model_from_pretrained(unknown, "noscale.pt"), InputError);
}
