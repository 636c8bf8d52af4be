// YOLOv8 loss: the two reference golden cases (also from bf16 maps under autocast), the assigner on
// hand-made cases (competing GTs, no GT, border boxes), gradients, layout independence and input
// checks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/engine/autocast.h"
#include "plugins/detect/loss/box_iou.h"
#include "plugins/detect/loss/detection_loss.h"
#include "plugins/detect/loss/tal_assigner.h"
#include "plugins/detect/model/yolo_model.h"

namespace {

using namespace crucible::detect;

std::string fixture(const std::string& name) {
    return std::string(CRUCIBLE_FIXTURES_DIR) + "/yolov8/" + name;
}

torch::Tensor read_f32(const crucible::SafetensorsFile& file, const std::string& name) {
    const auto& info = file.at(name);
    EXPECT_EQ(info.dtype, crucible::SafetensorsDtype::F32) << name;
    auto t = torch::empty(info.shape, torch::kFloat);
    const auto bytes = file.data(info);
    EXPECT_EQ(bytes.size(), static_cast<size_t>(t.numel()) * sizeof(float));
    std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
    return t;
}

struct GoldenCase {
    std::vector<torch::Tensor> levels;
    DetectionTargets targets;
    crucible::Json expected;
};

GoldenCase load_case(const std::string& stem) {
    auto file = crucible::SafetensorsFile::open(fixture(stem + "_inputs.safetensors"));
    GoldenCase c;
    c.levels = {read_f32(file, "feats_p3"), read_f32(file, "feats_p4"), read_f32(file, "feats_p5")};
    c.targets.batch_index = read_f32(file, "batch_idx");
    c.targets.classes = read_f32(file, "cls");
    c.targets.boxes = read_f32(file, "bboxes_xywhn");
    EXPECT_EQ(file.metadata().at("nc"), "4");
    EXPECT_EQ(file.metadata().at("imgsz"), "256");
    c.expected = crucible::read_json_file(fixture(stem + "_expected.json"));
    return c;
}

void expect_rel_near(double actual, double expected, double rel, const std::string& what) {
    EXPECT_LE(std::abs(actual - expected), rel * std::abs(expected))
        << what << ": got " << actual << ", reference " << expected;
}

void check_golden(const std::string& stem, torch::MemoryFormat format) {
    auto c = load_case(stem);
    for (auto& l : c.levels)
        l = l.contiguous(format);
    DetectionLoss loss{DetectionLossOptions(4)};
    auto result = loss(c.levels, c.targets);
    const double box = result.items[0].item<double>();
    const double cls = result.items[1].item<double>();
    const double dfl = result.items[2].item<double>();
    expect_rel_near(box, c.expected["loss_box"].get<double>(), 1e-4, stem + " loss_box");
    expect_rel_near(cls, c.expected["loss_cls"].get<double>(), 1e-4, stem + " loss_cls");
    expect_rel_near(dfl, c.expected["loss_dfl"].get<double>(), 1e-4, stem + " loss_dfl");
    expect_rel_near(result.total.item<double>(), c.expected["total_times_batch"].get<double>(),
                    1e-4, stem + " total");
    EXPECT_GT(result.foreground, 0);
}

TEST(DetectionLoss, GoldenCaseLargeLogits) {
    check_golden("loss_case", torch::MemoryFormat::Contiguous);
}

TEST(DetectionLoss, GoldenCaseNearInitialLogits) {
    check_golden("loss_case2", torch::MemoryFormat::Contiguous);
}

TEST(DetectionLoss, GoldenCasesWithChannelsLastMaps) {
    check_golden("loss_case", torch::MemoryFormat::ChannelsLast);
    check_golden("loss_case2", torch::MemoryFormat::ChannelsLast);
}

// What a head under bf16 autocast hands the loss: bf16 maps. The loss computes in fp32 (its
// results are fp32) and lands near the reference within what rounding the inputs to bf16 moves.
// (The same cases on CUDA: tests/gpu.)
TEST(DetectionLoss, GoldenCasesUnderCpuBf16AutocastStayFp32) {
    for (const std::string stem : {"loss_case", "loss_case2"}) {
        auto c = load_case(stem);
        for (auto& l : c.levels)
            l = l.to(torch::kBFloat16);
        crucible::engine::AutocastGuard autocast({true, c10::DeviceType::CPU, torch::kBFloat16});
        DetectionLoss loss{DetectionLossOptions(4)};
        auto result = loss(c.levels, c.targets);
        EXPECT_EQ(result.total.scalar_type(), torch::kFloat32) << stem;
        EXPECT_EQ(result.items.scalar_type(), torch::kFloat32) << stem;
        expect_rel_near(result.items[0].item<double>(), c.expected["loss_box"].get<double>(), 3e-2,
                        stem + " loss_box (bf16)");
        expect_rel_near(result.items[1].item<double>(), c.expected["loss_cls"].get<double>(), 3e-2,
                        stem + " loss_cls (bf16)");
        expect_rel_near(result.items[2].item<double>(), c.expected["loss_dfl"].get<double>(), 3e-2,
                        stem + " loss_dfl (bf16)");
    }
}

TEST(DetectionLoss, GoldenCaseGradientsAreFinite) {
    auto c = load_case("loss_case2");
    for (auto& l : c.levels)
        l.set_requires_grad(true);
    DetectionLoss loss{DetectionLossOptions(4)};
    auto result = loss(c.levels, c.targets);
    result.total.backward();
    for (auto& l : c.levels) {
        ASSERT_TRUE(l.grad().defined());
        EXPECT_TRUE(torch::isfinite(l.grad()).all().item<bool>());
        EXPECT_GT(l.grad().abs().sum().item<double>(), 0.0);
    }
}

// A 4x4 grid of stride 8 (a 32x32 image): anchors at pixel centres 4, 12, 20, 28.
torch::Tensor grid_points_4x4() {
    std::vector<torch::Tensor> level{torch::zeros({1, 1, 4, 4})};
    auto anchors = make_anchors(level, {8.0});
    return anchors.points * anchors.strides;
}

Assignment assign_two_gts(const torch::Tensor& contested_pred_box) {
    auto points = grid_points_4x4();  // [16, 2]
    const int64_t a = points.size(0);
    // Every prediction is a 6x6 box around its anchor, except the contested anchor (12, 12),
    // index 1 * 4 + 1 = 5.
    auto pred_boxes = torch::cat({points - 3, points + 3}, -1).unsqueeze(0).clone();  // [1,A,4]
    pred_boxes[0][5] = contested_pred_box;
    auto pred_scores = torch::full({1, a, 2}, 0.5f);
    auto gt_labels = torch::tensor({0.0f, 1.0f}).view({1, 2, 1});
    auto gt_boxes =
        torch::tensor({0.0f, 0.0f, 16.0f, 16.0f, 8.0f, 8.0f, 24.0f, 24.0f}).view({1, 2, 4});
    auto gt_mask = torch::ones({1, 2, 1}, torch::kBool);
    TaskAlignedAssigner assigner(AssignerOptions(2));
    return assigner.assign(pred_scores, pred_boxes, points, gt_labels, gt_boxes, gt_mask);
}

TEST(TaskAlignedAssigner, ContestedAnchorGoesToHigherIouGt) {
    // Prediction close to GT 1 ([8, 8, 24, 24]).
    auto near_second = assign_two_gts(torch::tensor({9.0f, 9.0f, 23.0f, 23.0f}));
    EXPECT_TRUE(near_second.foreground[0][5].item<bool>());
    EXPECT_EQ(near_second.target_gt_index[0][5].item<int64_t>(), 1);
    EXPECT_EQ(near_second.target_labels[0][5].item<int64_t>(), 1);
    EXPECT_FLOAT_EQ(near_second.target_boxes[0][5][0].item<float>(), 8.0f);
    EXPECT_GT(near_second.target_scores[0][5][1].item<float>(), 0.0f);
    EXPECT_EQ(near_second.target_scores[0][5][0].item<float>(), 0.0f);
    // Prediction close to GT 0 ([0, 0, 16, 16]).
    auto near_first = assign_two_gts(torch::tensor({1.0f, 1.0f, 15.0f, 15.0f}));
    EXPECT_TRUE(near_first.foreground[0][5].item<bool>());
    EXPECT_EQ(near_first.target_gt_index[0][5].item<int64_t>(), 0);
    EXPECT_EQ(near_first.target_labels[0][5].item<int64_t>(), 0);
    EXPECT_GT(near_first.target_scores[0][5][0].item<float>(), 0.0f);
    EXPECT_EQ(near_first.target_scores[0][5][1].item<float>(), 0.0f);

    // Uncontested anchors: (4, 4) only inside GT 0, (20, 20) only inside GT 1; (28, 28) in none.
    for (const auto& r : {near_first, near_second}) {
        EXPECT_EQ(r.target_gt_index[0][0].item<int64_t>(), 0);
        EXPECT_TRUE(r.foreground[0][0].item<bool>());
        EXPECT_EQ(r.target_gt_index[0][10].item<int64_t>(), 1);
        EXPECT_TRUE(r.foreground[0][10].item<bool>());
        EXPECT_FALSE(r.foreground[0][15].item<bool>());
        EXPECT_EQ(r.target_scores[0][15].sum().item<float>(), 0.0f);
        // Each anchor is assigned to at most one GT: one non-zero class score at most.
        EXPECT_LE((r.target_scores[0] > 0).sum(-1).max().item<int64_t>(), 1);
    }
}

TEST(TaskAlignedAssigner, TargetScoresNormalizedPerGt) {
    auto r = assign_two_gts(torch::tensor({9.0f, 9.0f, 23.0f, 23.0f}));
    auto points = grid_points_4x4();
    auto pred_boxes = torch::cat({points - 3, points + 3}, -1);
    pred_boxes[5] = torch::tensor({9.0f, 9.0f, 23.0f, 23.0f});
    auto gts = torch::tensor({0.0f, 0.0f, 16.0f, 16.0f, 8.0f, 8.0f, 24.0f, 24.0f}).view({2, 4});
    for (int64_t g = 0; g < 2; ++g) {
        auto assigned = r.foreground[0] & (r.target_gt_index[0] == g);
        ASSERT_GT(assigned.sum().item<int64_t>(), 0);
        auto ious = complete_iou(gts[g].unsqueeze(0), pred_boxes.index({assigned})).clamp_min(0);
        auto scores = r.target_scores[0].index({assigned}).select(-1, g);
        // align = 0.5^0.5 * IoU^6 (equal class scores); target = align * max IoU of the GT /
        // (max align of the GT + 1e-9): the best anchor's target is about the GT's best IoU.
        const double max_iou = ious.max().item<double>();
        auto align = std::sqrt(0.5) * ious.to(torch::kDouble).pow(6);
        auto expected = align * max_iou / (align.max() + 1e-9);
        EXPECT_TRUE(torch::allclose(scores.to(torch::kDouble), expected, 1e-4, 1e-7))
            << scores << expected;
        EXPECT_NEAR(scores.max().item<double>(), max_iou, 0.02 * max_iou);
    }
}

TEST(TaskAlignedAssigner, TopKLimitsPositivesPerGt) {
    // One GT covering the whole 32x32 image: all 16 anchors are candidates, top-k keeps k.
    auto points = grid_points_4x4();
    auto pred_boxes = torch::cat({points - 3, points + 3}, -1).unsqueeze(0);
    auto pred_scores = torch::rand({1, 16, 1}) * 0.5 + 0.25;
    auto gt_boxes = torch::tensor({0.0f, 0.0f, 32.0f, 32.0f}).view({1, 1, 4});
    for (int64_t k : {1, 3, 10, 16}) {
        TaskAlignedAssigner assigner(AssignerOptions(1).topk(k));
        auto r = assigner.assign(pred_scores, pred_boxes, points, torch::zeros({1, 1, 1}), gt_boxes,
                                 torch::ones({1, 1, 1}, torch::kBool));
        EXPECT_EQ(r.foreground.sum().item<int64_t>(), k);
    }
}

TEST(TaskAlignedAssigner, PaddedGtRowsAreIgnored) {
    auto points = grid_points_4x4();
    auto pred_boxes = torch::cat({points - 3, points + 3}, -1).unsqueeze(0).repeat({2, 1, 1});
    auto pred_scores = torch::full({2, 16, 2}, 0.5f);
    // Image 0 has one GT, image 1 none (its row is padding).
    auto gt_boxes =
        torch::tensor({0.0f, 0.0f, 16.0f, 16.0f, 0.0f, 0.0f, 0.0f, 0.0f}).view({2, 1, 4});
    auto gt_mask = torch::tensor({true, false}).view({2, 1, 1});
    TaskAlignedAssigner assigner(AssignerOptions(2));
    auto r = assigner.assign(pred_scores, pred_boxes, points, torch::zeros({2, 1, 1}), gt_boxes,
                             gt_mask);
    EXPECT_EQ(r.foreground[0].sum().item<int64_t>(), 4);  // anchors 4/12 x 4/12
    EXPECT_EQ(r.foreground[1].sum().item<int64_t>(), 0);
    EXPECT_EQ(r.target_scores[1].abs().sum().item<float>(), 0.0f);
}

std::vector<torch::Tensor> random_levels(int64_t batch, int64_t nc, int64_t imgsz, double scale,
                                         bool requires_grad) {
    std::vector<torch::Tensor> levels;
    for (int64_t s : {8, 16, 32}) {
        auto t = torch::randn({batch, 64 + nc, imgsz / s, imgsz / s}) * scale;
        t.set_requires_grad(requires_grad);
        levels.push_back(t);
    }
    return levels;
}

TEST(DetectionLoss, NoGroundTruthPushesScoresDown) {
    torch::manual_seed(3);
    const int64_t nc = 3;
    auto levels = random_levels(2, nc, 64, 1.0, true);
    DetectionTargets empty{torch::zeros({0}), torch::zeros({0, 1}), torch::zeros({0, 4})};
    DetectionLoss loss{DetectionLossOptions(nc)};
    auto r = loss(levels, empty);
    EXPECT_EQ(r.items[0].item<float>(), 0.0f);
    EXPECT_EQ(r.items[2].item<float>(), 0.0f);
    EXPECT_EQ(r.foreground, 0);
    // All targets are 0 and the normalizer is max(0, 1) = 1: cls = 0.5 * sum softplus(logit).
    double expected = 0.0;
    for (const auto& l : levels) {
        expected += torch::softplus(l.narrow(1, 64, nc)).sum().item<double>();
    }
    expected *= 0.5;
    EXPECT_NEAR(r.items[1].item<double>(), expected, 1e-4 * expected);
    EXPECT_NEAR(r.total.item<double>(), 2 * expected, 2e-4 * expected);
    r.total.backward();
    for (const auto& l : levels) {
        auto g = l.grad();
        EXPECT_TRUE((g.narrow(1, 64, nc) > 0).all().item<bool>());  // descent lowers the logits
        EXPECT_EQ(g.narrow(1, 0, 64).abs().sum().item<float>(), 0.0f);
    }
    // Undefined targets mean "no boxes" too.
    auto r2 = loss(levels, DetectionTargets{});
    EXPECT_NEAR(r2.items[1].item<double>(), expected, 1e-4 * expected);
}

TEST(DetectionLoss, BoxesTouchingTheBorder) {
    torch::manual_seed(4);
    const int64_t nc = 2;
    auto levels = random_levels(2, nc, 64, 0.5, true);
    // Image 0: a box in the top-left corner (x1 = y1 = 0), one in the bottom-right corner
    // (x2 = y2 = 64 px); image 1: the whole image (distances exceed the last DFL bin).
    DetectionTargets t{torch::tensor({0.0f, 0.0f, 1.0f}), torch::tensor({0.0f, 1.0f, 1.0f}),
                       torch::tensor({0.125f, 0.125f, 0.25f, 0.25f,  //
                                      0.8f, 0.85f, 0.4f, 0.3f,       //
                                      0.5f, 0.5f, 1.0f, 1.0f})
                           .view({3, 4})};
    DetectionLoss loss{DetectionLossOptions(nc)};
    auto r = loss(levels, t);
    EXPECT_TRUE(torch::isfinite(r.items).all().item<bool>());
    EXPECT_GT(r.items[0].item<float>(), 0.0f);
    EXPECT_GT(r.items[2].item<float>(), 0.0f);
    EXPECT_GE(r.foreground, 3);
    r.total.backward();
    for (const auto& l : levels)
        EXPECT_TRUE(torch::isfinite(l.grad()).all().item<bool>());

    auto padded = pad_targets(t, 2, 64, 64, torch::kCPU);
    ASSERT_EQ(padded.boxes.sizes().vec(), (std::vector<int64_t>{2, 2, 4}));
    EXPECT_TRUE(torch::allclose(padded.boxes[0][0], torch::tensor({0.0f, 0.0f, 16.0f, 16.0f})));
    EXPECT_TRUE(torch::allclose(padded.boxes[0][1], torch::tensor({38.4f, 44.8f, 64.0f, 64.0f})));
    EXPECT_TRUE(torch::allclose(padded.boxes[1][0], torch::tensor({0.0f, 0.0f, 64.0f, 64.0f})));
    EXPECT_TRUE(padded.mask[1][0].item<bool>());
    EXPECT_FALSE(padded.mask[1][1].item<bool>());
    EXPECT_EQ(padded.labels[0][1][0].item<float>(), 1.0f);
}

TEST(DetectionLoss, PadTargetsKeepsRowOrderPerImage) {
    // Rows of image 1 and image 0 interleaved: each image keeps its own order.
    DetectionTargets t{torch::tensor({1, 0, 1, 0, 1}), torch::tensor({0, 1, 2, 3, 4}),
                       torch::rand({5, 4}) * 0.5 + 0.25};
    auto padded = pad_targets(t, 3, 100, 100, torch::kCPU);
    ASSERT_EQ(padded.labels.sizes().vec(), (std::vector<int64_t>{3, 3, 1}));
    EXPECT_EQ(padded.labels.flatten()[0].item<float>(), 1.0f);
    EXPECT_EQ(padded.labels.flatten()[1].item<float>(), 3.0f);
    EXPECT_EQ(padded.labels.flatten()[3].item<float>(), 0.0f);
    EXPECT_EQ(padded.labels.flatten()[4].item<float>(), 2.0f);
    EXPECT_EQ(padded.labels.flatten()[5].item<float>(), 4.0f);
    EXPECT_EQ(padded.mask.sum().item<int64_t>(), 5);
    EXPECT_FALSE(padded.mask[0][2][0].item<bool>());
    EXPECT_FALSE(padded.mask[2].any().item<bool>());
}

TEST(DetectionLoss, GradientsFlowIntoTheHead) {
    torch::manual_seed(5);
    const int64_t nc = 3;
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), nc));
    model->train();
    auto levels = model->forward_levels(torch::rand({2, 3, 64, 64}));
    DetectionTargets t{
        torch::tensor({0.0f, 1.0f}), torch::tensor({2.0f, 0.0f}),
        torch::tensor({0.5f, 0.5f, 0.4f, 0.3f, 0.3f, 0.6f, 0.3f, 0.5f}).view({2, 4})};
    DetectionLoss loss{DetectionLossOptions(nc)};
    auto r = loss(levels, t);
    ASSERT_GT(r.foreground, 0);
    r.total.backward();
    auto params = model->named_parameters();
    for (const std::string name : {"model.22.cv2.0.2.weight", "model.22.cv3.0.2.weight",
                                   "model.22.cv3.2.2.bias", "model.0.conv.weight"}) {
        auto g = params[name].grad();
        ASSERT_TRUE(g.defined()) << name;
        EXPECT_GT(g.abs().sum().item<double>(), 0.0) << name;
    }
    EXPECT_FALSE(params["model.22.dfl.conv.weight"].grad().defined());
}

TEST(DetectionLoss, RejectsInconsistentInput) {
    DetectionLoss loss{DetectionLossOptions(2)};
    auto levels = random_levels(2, 2, 64, 1.0, false);
    auto box = torch::tensor({0.5f, 0.5f, 0.2f, 0.2f}).view({1, 4});
    EXPECT_THROW(loss(levels, DetectionTargets{torch::tensor({0.0f}), torch::tensor({2.0f}), box}),
                 crucible::Error);  // class 2 of 2
    EXPECT_THROW(loss(levels, DetectionTargets{torch::tensor({2.0f}), torch::tensor({0.0f}), box}),
                 crucible::Error);  // image 2 of 2
    EXPECT_THROW(
        loss(levels, DetectionTargets{torch::tensor({0.0f, 0.0f}), torch::tensor({0.0f}), box}),
        crucible::Error);  // row counts differ
    EXPECT_THROW(loss({levels[0], levels[1]}, DetectionTargets{}), crucible::Error);
    DetectionLoss wrong_nc{DetectionLossOptions(5)};
    EXPECT_THROW(wrong_nc(levels, DetectionTargets{}), crucible::Error);
}

TEST(DetectionLoss, HalfPrecisionMapsGiveFloatLoss) {
    // Under AMP the head may emit half maps; the loss is still computed in fp32.
    auto c = load_case("loss_case2");
    DetectionLoss loss{DetectionLossOptions(4)};
    auto reference = loss(c.levels, c.targets);
    std::vector<torch::Tensor> half;
    for (const auto& l : c.levels)
        half.push_back(l.to(torch::kHalf));
    auto r = loss(half, c.targets);
    EXPECT_EQ(r.total.scalar_type(), torch::kFloat);
    EXPECT_NEAR(r.total.item<double>(), reference.total.item<double>(),
                1e-2 * reference.total.item<double>());
}

}  // namespace
