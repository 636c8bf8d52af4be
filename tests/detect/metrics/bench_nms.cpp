// NMS and metric throughput (not a test): `bench_detect_nms`. Prints the time of
// non_max_suppression on a [1, 4 + 80, 8400] output with about 8000 candidates above 0.001 (the
// size of a yolov8 output at 640 px early in training) and of matching + AP for 300 detections.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "plugins/detect/metrics/detection_metrics.h"
#include "plugins/detect/metrics/nms.h"

namespace {

torch::Tensor random_output(int anchors, int nc, double keep_fraction) {
    torch::manual_seed(0);
    auto out = torch::zeros({1, 4 + nc, anchors});
    out.slice(1, 0, 2).uniform_(0, 640);
    out.slice(1, 2, 4).uniform_(8, 160);
    // Each anchor gets one class score above the threshold with probability keep_fraction.
    auto scores =
        torch::rand({anchors}) * (torch::rand({anchors}) < keep_fraction).to(torch::kFloat);
    auto cls = torch::randint(nc, {anchors}, torch::kLong);
    for (int a = 0; a < anchors; ++a)
        out[0][4 + cls[a].item<long>()][a] = scores[a];
    return out;
}

void BM_NmsYolo640(benchmark::State& state) {
    const auto out = random_output(8400, 80, 0.95);
    long kept = 0;
    for (auto _ : state)
        kept = crucible::detect::non_max_suppression(out)[0].size(0);
    state.counters["candidates"] =
        static_cast<double>((out.slice(1, 4) > 0.001).sum().item<long>());
    state.counters["kept"] = static_cast<double>(kept);
}
BENCHMARK(BM_NmsYolo640)->Unit(benchmark::kMillisecond);

void BM_MatchAndMetrics(benchmark::State& state) {
    const auto out = random_output(8400, 80, 0.95);
    const auto preds =
        crucible::detect::to_pred_boxes(crucible::detect::non_max_suppression(out)[0]);
    std::vector<crucible::detect::GtBox> gt;
    for (std::size_t i = 0; i < 30 && i < preds.size(); ++i)
        gt.push_back({preds[i].cls, preds[i].x1, preds[i].y1, preds[i].x2, preds[i].y2});
    for (auto _ : state) {
        crucible::detect::DetectionStats stats;
        for (int img = 0; img < 64; ++img)
            stats.add_image(gt, preds);
        benchmark::DoNotOptimize(stats.compute().map50_95);
    }
    state.counters["images"] = 64;
}
BENCHMARK(BM_MatchAndMetrics)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
