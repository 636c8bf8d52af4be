// Times batch norm + SiLU in training, forward and backward, on the activation shapes of a
// YOLOv8n step at 320 px (batch 16): the fused kernels of core/engine/bn_silu.h against
// LibTorch's BatchNorm2d followed by silu, both channels-last. It prints ms per phase over all
// layers and the bytes each path must at least move, as GB/s, so a kernel's distance from the
// memory bound shows.
//
//   bench_bn_silu [rounds=5] [threads=2]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/base/allocator.h"
#include "core/engine/bn_silu.h"
#include "core/engine/fused_kernels.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// (channels, side) of every batch norm of YOLOv8n at 320 px, in model order, batch 16.
struct Shape {
    std::int64_t channels, side;
};

std::vector<Shape> yolov8n_shapes() {
    return {{16, 160}, {32, 80},  {32, 80},  {16, 80},  {16, 80},  {32, 80},  {64, 40},  {64, 40},
            {32, 40},  {32, 40},  {32, 40},  {32, 40},  {64, 40},  {128, 20}, {128, 20}, {64, 20},
            {64, 20},  {64, 20},  {64, 20},  {128, 20}, {256, 10}, {256, 10}, {128, 10}, {128, 10},
            {256, 10}, {128, 10}, {256, 10}, {128, 20}, {64, 20},  {64, 20},  {128, 20}, {64, 40},
            {32, 40},  {32, 40},  {64, 40},  {64, 20},  {128, 20}, {64, 20},  {64, 20},  {128, 20},
            {128, 10}, {256, 10}, {128, 10}, {128, 10}, {256, 10}, {64, 40},  {64, 40},  {64, 20},
            {64, 20},  {64, 10},  {64, 10},  {64, 40},  {64, 40},  {64, 20},  {64, 20},  {64, 10},
            {64, 10}};
}

struct Times {
    double forward = 0, backward = 0;
};

// One layer's input and output gradient, made once: drawing them costs more than the layer.
struct Layer {
    torch::Tensor x, dy;
};

std::vector<Layer> make_layers(const std::vector<Shape>& shapes) {
    std::vector<Layer> layers;
    for (const Shape& s : shapes) {
        auto x = torch::randn({16, s.channels, s.side, s.side})
                     .contiguous(torch::MemoryFormat::ChannelsLast);
        layers.push_back({x, torch::randn_like(x)});
    }
    return layers;
}

Times time_layers(const std::vector<Layer>& layers, bool fused) {
    crucible::engine::set_fused_cpu_kernels_enabled(fused);
    Times t;
    for (const Layer& layer : layers) {
        torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(layer.x.size(1)).momentum(0.03));
        bn->train();
        const auto x = layer.x.detach().requires_grad_(true);
        const auto& dy = layer.dy;
        auto t0 = Clock::now();
        auto fused_y = crucible::engine::fused_bn_silu(x, *bn);
        auto y = fused_y ? *fused_y : torch::silu(bn->forward(x));
        t.forward += ms_since(t0);
        t0 = Clock::now();
        y.backward(dy);
        t.backward += ms_since(t0);
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
    const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
    if (rounds < 1 || threads < 1) {
        std::fprintf(stderr, "usage: bench_bn_silu [rounds] [threads]\n");
        return 2;
    }
    at::set_num_threads(threads);
    crucible::keep_freed_memory_for_reuse();  // as training does
    const auto shapes = yolov8n_shapes();
    double elements = 0;
    for (const Shape& s : shapes)
        elements += 16.0 * static_cast<double>(s.channels * s.side * s.side);
    // The least a fused pass can move: forward reads x twice and writes y; backward reads x and
    // dy, then x and dz, and writes dz and dx.
    const double forward_bytes = 3 * 4 * elements, backward_bytes = 6 * 4 * elements;
    std::printf("%zu layers, %.1f M elements, threads=%d; best of %d rounds, interleaved\n",
                shapes.size(), elements / 1e6, threads, rounds);
    const auto layers = make_layers(shapes);
    time_layers(layers, true);  // warm-up: allocator, pages
    time_layers(layers, false);
    Times best[2] = {{1e30, 1e30}, {1e30, 1e30}};
    for (int r = 0; r < rounds; ++r)
        for (int fused = 0; fused < 2; ++fused) {
            const Times t = time_layers(layers, fused == 1);
            best[fused].forward = std::min(best[fused].forward, t.forward);
            best[fused].backward = std::min(best[fused].backward, t.backward);
        }
    std::printf("%-10s %10s %10s %10s %14s %14s\n", "path", "forward", "backward", "both",
                "fwd GB/s*", "bwd GB/s*");
    const char* names[2] = {"LibTorch", "fused"};
    for (int f = 0; f < 2; ++f)
        std::printf("%-10s %8.1fms %8.1fms %8.1fms %14.1f %14.1f\n", names[f], best[f].forward,
                    best[f].backward, best[f].forward + best[f].backward,
                    forward_bytes / best[f].forward / 1e6, backward_bytes / best[f].backward / 1e6);
    std::printf("* the fused path's least traffic over the time: a bound both paths are held to\n");
    crucible::engine::set_fused_cpu_kernels_enabled(true);
    return 0;
}
