// YOLOv8 model: parameter counts, state-dict layout against the reference fixtures, output
// shapes, anchors, DFL decoding, bias init, channels-last equivalence.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/json.h"
#include "plugins/detect/model/yolo_model.h"

namespace {

using namespace crucible::detect;

// name -> shape of every parameter and buffer, as a state dict lists them.
std::map<std::string, std::vector<int64_t>> state_dict_shapes(torch::nn::Module& module) {
    std::map<std::string, std::vector<int64_t>> out;
    for (const auto& item : module.named_parameters())
        out[item.key()] = item.value().sizes().vec();
    for (const auto& item : module.named_buffers())
        out[item.key()] = item.value().sizes().vec();
    return out;
}

std::map<std::string, std::vector<int64_t>> fixture_shapes(const std::string& file) {
    const auto json =
        crucible::read_json_file(std::string(CRUCIBLE_FIXTURES_DIR) + "/yolov8/" + file);
    std::map<std::string, std::vector<int64_t>> out;
    for (const auto& [name, shape] : json.items())
        out[name] = shape.get<std::vector<int64_t>>();
    return out;
}

void expect_same_state_dict(int64_t nc, const std::string& fixture) {
    torch::manual_seed(0);
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), nc));
    const auto ours = state_dict_shapes(*model);
    const auto reference = fixture_shapes(fixture);
    EXPECT_EQ(reference.size(), 355u);
    EXPECT_EQ(ours.size(), reference.size());
    for (const auto& [name, shape] : reference) {
        auto it = ours.find(name);
        if (it == ours.end()) {
            ADD_FAILURE() << "missing tensor " << name;
            continue;
        }
        EXPECT_EQ(it->second, shape) << name;
    }
    for (const auto& [name, shape] : ours) {
        EXPECT_TRUE(reference.count(name)) << "extra tensor " << name;
    }
}

TEST(YoloModel, ParameterCountsOfYolov8n) {
    DetectionModel nc80(DetectionModelOptions(yolo_scale('n'), 80));
    DetectionModel nc4(DetectionModelOptions(yolo_scale('n'), 4));
    EXPECT_EQ(count_parameters(*nc80), 3157200);
    EXPECT_EQ(count_parameters(*nc4), 3011628);
    // Only the 16 DFL bin weights are frozen.
    int64_t frozen = 0;
    for (const auto& p : nc80->parameters()) {
        if (!p.requires_grad()) frozen += p.numel();
    }
    EXPECT_EQ(frozen, 16);
}

TEST(YoloModel, StateDictMatchesReferenceNc80) {
    expect_same_state_dict(80, "yolov8n_nc80_state_dict_shapes.json");
}

TEST(YoloModel, StateDictMatchesReferenceNc4) {
    expect_same_state_dict(4, "yolov8n_nc4_state_dict_shapes.json");
}

TEST(YoloModel, ParameterCountsOfLargerScales) {
    // Reference model summaries for 80 classes (the counts include the 16 DFL weights).
    const std::vector<std::pair<char, int64_t>> expected{
        {'s', 11166560}, {'m', 25902640}, {'l', 43691520}, {'x', 68229648}};
    for (const auto& [scale, count] : expected) {
        DetectionModel model(DetectionModelOptions(yolo_scale(scale), 80));
        EXPECT_EQ(count_parameters(*model), count) << "scale " << scale;
    }
}

TEST(YoloModel, ScaleRules) {
    EXPECT_EQ(scaled_channels(64, yolo_scale('n')), 16);
    EXPECT_EQ(scaled_channels(1024, yolo_scale('m')), 576);
    EXPECT_EQ(scaled_channels(1024, yolo_scale('x')), 640);
    EXPECT_EQ(scaled_repeats(3, yolo_scale('n')), 1);
    EXPECT_EQ(scaled_repeats(6, yolo_scale('n')), 2);
    EXPECT_EQ(scaled_repeats(6, yolo_scale('m')), 4);
    EXPECT_EQ(scaled_repeats(3, yolo_scale('l')), 3);
    EXPECT_EQ(scaled_repeats(1, yolo_scale('n')), 1);
    EXPECT_EQ(yolo_scale_from_model_name("yolov8s").name, 's');
    EXPECT_EQ(yolo_scale_from_model_name("YOLOv8X.yaml").name, 'x');
    EXPECT_EQ(yolo_scale_from_model_name("m").name, 'm');
    for (const std::string bad : {"", "yolov8", "yolov8q", "yolov5n", "yolov8nn", "../n"}) {
        EXPECT_THROW(yolo_scale_from_model_name(bad), crucible::InputError) << bad;
    }
    EXPECT_THROW(yolo_scale('q'), crucible::InputError);
    EXPECT_THROW(DetectionModel(DetectionModelOptions(yolo_scale('n'), 0)), crucible::InputError);
}

TEST(YoloModel, OutputShapesTrainAndEval) {
    torch::NoGradGuard no_grad;
    for (char scale : {'n', 's'}) {
        const int64_t nc = 3;
        DetectionModel model(DetectionModelOptions(yolo_scale(scale), nc));
        auto images = torch::rand({2, 3, 64, 96});
        model->train();
        auto out = model->forward(images);
        ASSERT_EQ(out.levels.size(), 3u);
        EXPECT_FALSE(out.decoded.defined());
        EXPECT_EQ(out.levels[0].sizes().vec(), (std::vector<int64_t>{2, 64 + nc, 8, 12}));
        EXPECT_EQ(out.levels[1].sizes().vec(), (std::vector<int64_t>{2, 64 + nc, 4, 6}));
        EXPECT_EQ(out.levels[2].sizes().vec(), (std::vector<int64_t>{2, 64 + nc, 2, 3}));
        model->eval();
        out = model->forward(images);
        ASSERT_TRUE(out.decoded.defined());
        EXPECT_EQ(out.decoded.sizes().vec(), (std::vector<int64_t>{2, 4 + nc, 96 + 24 + 6}));
        auto scores = out.decoded.narrow(1, 4, nc);
        EXPECT_TRUE((scores > 0).all().item<bool>());
        EXPECT_TRUE((scores < 1).all().item<bool>());
        auto wh = out.decoded.narrow(1, 2, 2);
        EXPECT_TRUE((wh >= 0).all().item<bool>());
    }
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), 2));
    EXPECT_THROW(model->forward(torch::rand({1, 3, 50, 64})), crucible::Error);
    EXPECT_THROW(model->forward(torch::rand({3, 64, 64})), crucible::Error);
}

TEST(YoloModel, AnchorsAndStrides) {
    std::vector<torch::Tensor> levels{torch::zeros({1, 5, 4, 6}), torch::zeros({1, 5, 2, 3}),
                                      torch::zeros({1, 5, 1, 2})};
    auto anchors = make_anchors(levels, {8, 16, 32});
    ASSERT_EQ(anchors.points.sizes().vec(), (std::vector<int64_t>{24 + 6 + 2, 2}));
    ASSERT_EQ(anchors.strides.sizes().vec(), (std::vector<int64_t>{32, 1}));
    auto p = anchors.points.accessor<float, 2>();
    auto s = anchors.strides.accessor<float, 2>();
    // Level 0, row-major: index 1 is (1.5, 0.5), index 6 is the second row (0.5, 1.5).
    EXPECT_FLOAT_EQ(p[0][0], 0.5f);
    EXPECT_FLOAT_EQ(p[0][1], 0.5f);
    EXPECT_FLOAT_EQ(p[1][0], 1.5f);
    EXPECT_FLOAT_EQ(p[1][1], 0.5f);
    EXPECT_FLOAT_EQ(p[6][0], 0.5f);
    EXPECT_FLOAT_EQ(p[6][1], 1.5f);
    EXPECT_FLOAT_EQ(p[23][0], 5.5f);
    EXPECT_FLOAT_EQ(p[23][1], 3.5f);
    // Level 1 starts at 24, level 2 at 30.
    EXPECT_FLOAT_EQ(p[24][0], 0.5f);
    EXPECT_FLOAT_EQ(p[29][0], 2.5f);
    EXPECT_FLOAT_EQ(p[29][1], 1.5f);
    EXPECT_FLOAT_EQ(p[31][0], 1.5f);
    EXPECT_FLOAT_EQ(s[0][0], 8.0f);
    EXPECT_FLOAT_EQ(s[23][0], 8.0f);
    EXPECT_FLOAT_EQ(s[24][0], 16.0f);
    EXPECT_FLOAT_EQ(s[29][0], 16.0f);
    EXPECT_FLOAT_EQ(s[30][0], 32.0f);
    EXPECT_FLOAT_EQ(s[31][0], 32.0f);
}

TEST(YoloModel, DflExpectationOnHandMadeDistribution) {
    // Side 0: all mass on bin 3. Side 1: half on bin 2, half on bin 5 -> 3.5.
    // Side 2: uniform -> 7.5. Side 3: 1/4 on bin 0, 3/4 on bin 15 -> 11.25.
    auto logits = torch::full({1, 64}, -1e4f);
    logits[0][0 * 16 + 3] = 0.0f;
    logits[0][1 * 16 + 2] = 0.0f;
    logits[0][1 * 16 + 5] = 0.0f;
    logits.narrow(1, 2 * 16, 16).fill_(1.0f);
    logits[0][3 * 16 + 0] = 0.0f;
    logits[0][3 * 16 + 15] = std::log(3.0f);
    auto d = dfl_expectation(logits);
    ASSERT_EQ(d.sizes().vec(), (std::vector<int64_t>{1, 4}));
    EXPECT_NEAR(d[0][0].item<float>(), 3.0f, 1e-5);
    EXPECT_NEAR(d[0][1].item<float>(), 3.5f, 1e-5);
    EXPECT_NEAR(d[0][2].item<float>(), 7.5f, 1e-5);
    EXPECT_NEAR(d[0][3].item<float>(), 11.25f, 1e-5);

    // The same distribution through the head's decoding: an anchor at (1.5, 0.5) of stride 8 on
    // a 2x2 / 1x1 / 1x1 level set. Box = (1.5 - 3, 0.5 - 3.5, 1.5 + 7.5, 0.5 + 11.25) * 8.
    Detect head(DetectOptions(2, {16, 32, 64}));
    std::vector<torch::Tensor> levels{torch::zeros({1, 66, 2, 2}), torch::zeros({1, 66, 1, 1}),
                                      torch::zeros({1, 66, 1, 1})};
    levels[0].index_put_({0, torch::indexing::Slice(0, 64), 0, 1}, logits[0]);
    levels[0].index_put_({0, 64, 0, 1}, 2.0f);  // class 0 logit
    torch::NoGradGuard no_grad;
    auto out = head->decode(levels);
    ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{1, 6, 6}));
    const float x1 = (1.5f - 3.0f) * 8, y1 = (0.5f - 3.5f) * 8;
    const float x2 = (1.5f + 7.5f) * 8, y2 = (0.5f + 11.25f) * 8;
    EXPECT_NEAR(out[0][0][1].item<float>(), (x1 + x2) / 2, 1e-4);
    EXPECT_NEAR(out[0][1][1].item<float>(), (y1 + y2) / 2, 1e-4);
    EXPECT_NEAR(out[0][2][1].item<float>(), x2 - x1, 1e-4);
    EXPECT_NEAR(out[0][3][1].item<float>(), y2 - y1, 1e-4);
    EXPECT_NEAR(out[0][4][1].item<float>(), 1.0f / (1.0f + std::exp(-2.0f)), 1e-6);
    EXPECT_NEAR(out[0][5][1].item<float>(), 0.5f, 1e-6);
    // An all-zero distribution is uniform: 7.5 on every side, a square of 15 cells centred on
    // the anchor. Anchor 5 (the last) is the single cell of the stride-32 level.
    EXPECT_NEAR(out[0][0][5].item<float>(), 0.5f * 32, 1e-4);
    EXPECT_NEAR(out[0][2][5].item<float>(), 15.0f * 32, 1e-3);
}

TEST(YoloModel, DflIsFrozenBinValues) {
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), 4));
    auto w = model->head->dfl->conv->weight;
    EXPECT_FALSE(w.requires_grad());
    EXPECT_TRUE(torch::equal(w.flatten(), torch::arange(16, w.options())));
}

TEST(YoloModel, BiasInitAndBatchNormSettings) {
    const int64_t nc = 4;
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), nc));
    const auto params = model->named_parameters();
    const double strides[] = {8, 16, 32};
    for (int i = 0; i < 3; ++i) {
        auto box_bias = params["model.22.cv2." + std::to_string(i) + ".2.bias"];
        auto cls_bias = params["model.22.cv3." + std::to_string(i) + ".2.bias"];
        EXPECT_TRUE(torch::allclose(box_bias, torch::ones_like(box_bias)));
        const double expected = std::log(5.0 / nc / std::pow(640.0 / strides[i], 2));
        EXPECT_TRUE(torch::allclose(cls_bias, torch::full_like(cls_bias, expected)));
    }
    const auto& bn = model->b0->bn->options;
    EXPECT_DOUBLE_EQ(bn.eps(), 1e-3);
    ASSERT_TRUE(bn.momentum().has_value());
    EXPECT_DOUBLE_EQ(*bn.momentum(), 0.03);
}

TEST(YoloModel, ChannelsLastMatchesContiguous) {
    torch::manual_seed(1);
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), 4));
    auto images = torch::rand({2, 3, 64, 64});
    // Eval mode (running stats) and train mode (batch stats) both.
    for (bool training : {false, true}) {
        torch::NoGradGuard no_grad;
        model->train(training);
        model->set_memory_format(torch::MemoryFormat::Contiguous);
        auto reference = model->forward_levels(images);
        auto ref_decoded = model->decode(reference);
        model->set_memory_format(torch::MemoryFormat::ChannelsLast);
        EXPECT_TRUE(model->b0->conv->weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
        auto levels = model->forward_levels(images.contiguous(torch::MemoryFormat::ChannelsLast));
        auto decoded = model->decode(levels);
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_TRUE(torch::allclose(levels[i], reference[i], 1e-4, 1e-4)) << "level " << i;
        }
        EXPECT_TRUE(torch::allclose(decoded, ref_decoded, 1e-4, 1e-3));
    }
    // Back to contiguous; values are unchanged by the re-layout.
    model->set_memory_format(torch::MemoryFormat::Contiguous);
    EXPECT_TRUE(model->b0->conv->weight.is_contiguous());
}

TEST(YoloModel, BackwardReachesEveryTrainableParameter) {
    torch::manual_seed(2);
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), 3));
    model->train();
    auto levels = model->forward_levels(torch::rand({1, 3, 64, 64}));
    torch::Tensor sum = torch::zeros({});
    for (auto& l : levels)
        sum = sum + l.pow(2).mean();
    sum.backward();
    for (const auto& item : model->named_parameters()) {
        if (!item.value().requires_grad()) continue;
        ASSERT_TRUE(item.value().grad().defined()) << item.key();
    }
}

}  // namespace
