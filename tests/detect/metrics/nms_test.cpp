// Class-aware multi-label NMS on [B, 4 + nc, A] model outputs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <random>

#include "core/base/error.h"
#include "plugins/detect/metrics/nms.h"

namespace crucible::detect {
namespace {

// Builds a [1, 4 + nc, A] output from rows {cx, cy, w, h, score_0, ..., score_nc-1}.
torch::Tensor output(const std::vector<std::vector<float>>& anchors) {
    const auto a = static_cast<std::int64_t>(anchors.size());
    const auto rows = static_cast<std::int64_t>(anchors.front().size());
    auto t = torch::zeros({1, rows, a});
    for (std::int64_t i = 0; i < a; ++i)
        for (std::int64_t r = 0; r < rows; ++r)
            t[0][r][i] = anchors[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)];
    return t;
}

TEST(Nms, ConvertsToCornersAndSortsByConfidence) {
    auto dets =
        non_max_suppression(output({{50, 40, 20, 10, 0.3f, 0.0f}, {200, 200, 40, 40, 0.0f, 0.8f}}));
    ASSERT_EQ(dets.size(), 1u);
    const auto d = dets[0];
    ASSERT_EQ(d.size(0), 2);
    ASSERT_EQ(d.size(1), 6);
    // First the 0.8 box of class 1.
    EXPECT_FLOAT_EQ(d[0][0].item<float>(), 180);
    EXPECT_FLOAT_EQ(d[0][3].item<float>(), 220);
    EXPECT_FLOAT_EQ(d[0][4].item<float>(), 0.8f);
    EXPECT_FLOAT_EQ(d[0][5].item<float>(), 1);
    EXPECT_FLOAT_EQ(d[1][0].item<float>(), 40);
    EXPECT_FLOAT_EQ(d[1][1].item<float>(), 35);
    EXPECT_FLOAT_EQ(d[1][2].item<float>(), 60);
    EXPECT_FLOAT_EQ(d[1][3].item<float>(), 45);
    EXPECT_FLOAT_EQ(d[1][5].item<float>(), 0);
}

TEST(Nms, SuppressesOverlapWithinAClassOnlyAboveIou) {
    // Boxes 100 wide: shifted by 10 px -> IoU 90/110 = 0.818 (> 0.7, suppressed);
    // shifted by 30 px -> IoU 70/130 = 0.54 (kept).
    auto d = non_max_suppression(output(
        {{100, 100, 100, 100, 0.9f}, {110, 100, 100, 100, 0.8f}, {130, 100, 100, 100, 0.7f}}))[0];
    ASSERT_EQ(d.size(0), 2);
    EXPECT_FLOAT_EQ(d[0][4].item<float>(), 0.9f);
    EXPECT_FLOAT_EQ(d[1][4].item<float>(), 0.7f);
}

TEST(Nms, ClassesDoNotSuppressEachOther) {
    // The same place, two anchors, each confident in a different class.
    auto d = non_max_suppression(
        output({{100, 100, 50, 50, 0.9f, 0.0f}, {100, 100, 50, 50, 0.0f, 0.8f}}))[0];
    ASSERT_EQ(d.size(0), 2);
    EXPECT_FLOAT_EQ(d[0][5].item<float>(), 0);
    EXPECT_FLOAT_EQ(d[1][5].item<float>(), 1);
    NmsOptions agnostic;
    agnostic.agnostic = true;
    EXPECT_EQ(
        non_max_suppression(
            output({{100, 100, 50, 50, 0.9f, 0.0f}, {100, 100, 50, 50, 0.0f, 0.8f}}), agnostic)[0]
            .size(0),
        1);
}

TEST(Nms, MultiLabelKeepsABoxForSeveralClasses) {
    auto d = non_max_suppression(output({{100, 100, 50, 50, 0.9f, 0.6f, 0.0005f}}))[0];
    ASSERT_EQ(d.size(0), 2);  // class 2 is below the 0.001 threshold
    EXPECT_FLOAT_EQ(d[0][5].item<float>(), 0);
    EXPECT_FLOAT_EQ(d[1][5].item<float>(), 1);
    EXPECT_FLOAT_EQ(d[1][4].item<float>(), 0.6f);
    NmsOptions single;
    single.multi_label = false;
    EXPECT_EQ(
        non_max_suppression(output({{100, 100, 50, 50, 0.9f, 0.6f, 0.0f}}), single)[0].size(0), 1);
}

TEST(Nms, ConfidenceThresholdIsStrict) {
    auto d = non_max_suppression(
        output({{10, 10, 5, 5, 0.0005f}, {100, 100, 5, 5, 0.002f}, {200, 200, 5, 5, 0.0f}}))[0];
    ASSERT_EQ(d.size(0), 1);
    EXPECT_FLOAT_EQ(d[0][4].item<float>(), 0.002f);
    NmsOptions high;
    high.conf_threshold = 0.5;
    EXPECT_EQ(non_max_suppression(output({{10, 10, 5, 5, 0.5f}}), high)[0].size(0), 0);
}

TEST(Nms, KeepsAtMostMaxDetTheMostConfident) {
    // 500 disjoint boxes on a grid with distinct scores.
    std::vector<std::vector<float>> rows;
    for (int i = 0; i < 500; ++i)
        rows.push_back({static_cast<float>(20 * (i % 25) + 10),
                        static_cast<float>(20 * (i / 25) + 10), 10, 10,
                        0.01f + 0.001f * static_cast<float>(i)});
    auto d = non_max_suppression(output(rows))[0];
    ASSERT_EQ(d.size(0), 300);
    EXPECT_FLOAT_EQ(d[0][4].item<float>(), 0.01f + 0.001f * 499);
    EXPECT_FLOAT_EQ(d[299][4].item<float>(), 0.01f + 0.001f * 200);
    NmsOptions few;
    few.max_det = 7;
    EXPECT_EQ(non_max_suppression(output(rows), few)[0].size(0), 7);
}

TEST(Nms, BatchOfImagesIsIndependentAndEmptyImagesGiveNoRows) {
    auto t = torch::zeros({3, 6, 4});
    t[1][0][2] = 50;
    t[1][1][2] = 50;
    t[1][2][2] = 20;
    t[1][3][2] = 20;
    t[1][5][2] = 0.7f;
    auto d = non_max_suppression(t);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[0].size(0), 0);
    EXPECT_EQ(d[0].size(1), 6);
    ASSERT_EQ(d[1].size(0), 1);
    EXPECT_FLOAT_EQ(d[1][0][5].item<float>(), 1);
    EXPECT_EQ(d[2].size(0), 0);
}

// Plain O(N²) per-class greedy NMS written independently, to compare on random data.
std::vector<std::tuple<int, float>> brute_force(const torch::Tensor& out, double iou_thr) {
    const auto x = out[0].transpose(0, 1).contiguous();
    struct Cand {
        float x1, y1, x2, y2, s;
        int c;
        int anchor;
    };
    std::vector<Cand> cands;
    for (std::int64_t i = 0; i < x.size(0); ++i) {
        const float cx = x[i][0].item<float>(), cy = x[i][1].item<float>();
        const float w = x[i][2].item<float>(), h = x[i][3].item<float>();
        for (std::int64_t c = 4; c < x.size(1); ++c) {
            const float s = x[i][c].item<float>();
            if (s > 0.001f)
                cands.push_back({cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, s,
                                 static_cast<int>(c - 4), static_cast<int>(i)});
        }
    }
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Cand& a, const Cand& b) { return a.s > b.s; });
    std::vector<std::tuple<int, float>> kept;
    std::vector<Cand> kept_c;
    for (const auto& c : cands) {
        bool ok = true;
        for (const auto& k : kept_c) {
            if (k.c != c.c) continue;
            const float iw = std::max(0.f, std::min(k.x2, c.x2) - std::max(k.x1, c.x1));
            const float ih = std::max(0.f, std::min(k.y2, c.y2) - std::max(k.y1, c.y1));
            const float inter = iw * ih;
            const float u = (k.x2 - k.x1) * (k.y2 - k.y1) + (c.x2 - c.x1) * (c.y2 - c.y1) - inter;
            if (inter / u > iou_thr) ok = false;
        }
        if (!ok) continue;
        kept_c.push_back(c);
        kept.emplace_back(c.c, c.s);
        if (kept.size() == 300) break;
    }
    return kept;
}

TEST(Nms, AgreesWithABruteForceGreedyOnRandomBoxes) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> pos(0, 320), size(8, 80), score(0, 1);
    const int anchors = 600, nc = 3;
    auto t = torch::zeros({1, 4 + nc, anchors});
    for (int i = 0; i < anchors; ++i) {
        t[0][0][i] = pos(rng);
        t[0][1][i] = pos(rng);
        t[0][2][i] = size(rng);
        t[0][3][i] = size(rng);
        for (int c = 0; c < nc; ++c)
            t[0][4 + c][i] = score(rng) < 0.5f ? score(rng) : 0.0f;
    }
    const auto d = non_max_suppression(t)[0];
    const auto ref = brute_force(t, 0.7);
    ASSERT_EQ(static_cast<std::size_t>(d.size(0)), ref.size());
    for (std::size_t k = 0; k < ref.size(); ++k) {
        EXPECT_EQ(static_cast<int>(d[static_cast<long>(k)][5].item<float>()), std::get<0>(ref[k]));
        EXPECT_FLOAT_EQ(d[static_cast<long>(k)][4].item<float>(), std::get<1>(ref[k]));
    }
}

TEST(Nms, RejectsWrongShapes) {
    EXPECT_THROW(non_max_suppression(torch::zeros({2, 5})), InputError);
    EXPECT_THROW(non_max_suppression(torch::zeros({1, 4, 10})), InputError);
    EXPECT_THROW(nms_boxes(torch::zeros({3, 5}), torch::zeros({3}), 0.5), InputError);
}

TEST(Nms, ToPredBoxes) {
    auto d = non_max_suppression(output({{50, 40, 20, 10, 0.3f, 0.9f}}))[0];
    const auto boxes = to_pred_boxes(d);
    ASSERT_EQ(boxes.size(), 2u);
    EXPECT_EQ(boxes[0].cls, 1);
    EXPECT_FLOAT_EQ(boxes[0].conf, 0.9f);
    EXPECT_DOUBLE_EQ(boxes[0].x1, 40);
    EXPECT_DOUBLE_EQ(boxes[0].y2, 45);
    EXPECT_TRUE(to_pred_boxes(torch::zeros({0, 6})).empty());
}

}  // namespace
}  // namespace crucible::detect
