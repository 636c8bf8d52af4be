// Times one YOLOv8 training step (forward, loss, backward) on CPU, NCHW against channels-last,
// and prints ms per phase plus the ratio of the whole step to pure forward + backward.
//
//   bench_yolo_step [iterations=3] [imgsz=320] [batch=16] [threads=2] [scale=n] [nc=4] [trace]
// With a trace path it records one channels-last step (forward, loss, backward, as training runs
// it) after a warm-up with LibTorch's Kineto profiler as a Chrome trace, and times nothing;
// `detect_reference.py step --profile` writes the reference's, profile_table.py sums either.
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/base/allocator.h"
#include "core/engine/fused_kernels.h"
#include "plugins/detect/loss/detection_loss.h"
#include "plugins/detect/model/yolo_model.h"

namespace {

using namespace crucible::detect;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Phases {
    double forward = 0, loss = 0, backward = 0, pure = 0;
};

DetectionTargets synthetic_targets(int64_t batch, int64_t nc, int64_t per_image) {
    const int64_t n = batch * per_image;
    auto batch_index = torch::arange(batch).repeat_interleave(per_image).to(torch::kFloat);
    auto classes = torch::randint(0, nc, {n}).to(torch::kFloat);
    auto wh = torch::rand({n, 2}) * 0.3 + 0.05;
    auto centre = wh / 2 + torch::rand({n, 2}) * (1 - wh);
    return DetectionTargets{batch_index, classes, torch::cat({centre, wh}, 1)};
}

Phases run(bool channels_last, int iterations, int64_t imgsz, int64_t batch, char scale,
           int64_t nc) {
    torch::manual_seed(0);
    DetectionModel model(DetectionModelOptions(yolo_scale(scale), nc));
    model->train();
    const auto format =
        channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
    model->set_memory_format(format);
    DetectionLoss loss{DetectionLossOptions(nc)};
    auto images = torch::rand({batch, 3, imgsz, imgsz}).contiguous(format);
    auto targets = synthetic_targets(batch, nc, 6);

    Phases total;
    for (int it = 0; it < iterations + 1; ++it) {  // the first iteration warms up
        model->zero_grad();
        auto t0 = Clock::now();
        auto levels = model->forward_levels(images);
        const double forward = ms_since(t0);
        t0 = Clock::now();
        auto result = loss(levels, targets);
        const double loss_ms = ms_since(t0);
        t0 = Clock::now();
        result.total.backward();
        const double backward = ms_since(t0);

        // Pure forward + backward with a trivial loss, as the reference figure is measured.
        model->zero_grad();
        t0 = Clock::now();
        auto plain = model->forward_levels(images);
        torch::Tensor s = plain[0].sum() + plain[1].sum() + plain[2].sum();
        s.backward();
        const double pure = ms_since(t0);
        if (it == 0) continue;
        total.forward += forward / iterations;
        total.loss += loss_ms / iterations;
        total.backward += backward / iterations;
        total.pure += pure / iterations;
    }
    return total;
}

void write_trace(const std::string& path, int64_t imgsz, int64_t batch, char scale, int64_t nc) {
    torch::manual_seed(0);
    DetectionModel model(DetectionModelOptions(yolo_scale(scale), nc));
    model->train();
    model->set_memory_format(torch::MemoryFormat::ChannelsLast);
    DetectionLoss loss{DetectionLossOptions(nc)};
    const auto images =
        torch::rand({batch, 3, imgsz, imgsz}).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto targets = synthetic_targets(batch, nc, 6);
    auto step = [&] {
        model->zero_grad();
        loss(model->forward_levels(images), targets).total.backward();
    };
    step();  // warm-up: allocator, oneDNN kernel choice
    namespace profiler = torch::autograd::profiler;
    using torch::profiler::impl::ActivityType;
    const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO,
                                                       /*report_input_shapes=*/true);
    profiler::prepareProfiler(config, {ActivityType::CPU});
    profiler::enableProfiler(config, {ActivityType::CPU});
    step();
    profiler::disableProfiler()->save(path);
    std::printf("wrote the trace of one step to %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    const int iterations = argc > 1 ? std::atoi(argv[1]) : 3;
    const int64_t imgsz = argc > 2 ? std::atoll(argv[2]) : 320;
    const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 16;
    const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
    const char scale = argc > 5 ? argv[5][0] : 'n';
    const int64_t nc = argc > 6 ? std::atoll(argv[6]) : 4;
    const std::string trace = argc > 7 ? argv[7] : "";
    if (iterations < 1 || imgsz < 32 || imgsz % 32 != 0 || batch < 1 || threads < 1 || nc < 1) {
        std::fprintf(stderr,
                     "usage: bench_yolo_step [iterations] [imgsz%%32] [batch] [threads] "
                     "[scale] [nc] [trace]\n");
        return 2;
    }
    at::set_num_threads(threads);
    crucible::keep_freed_memory_for_reuse();  // as training does
    if (!trace.empty()) {
        write_trace(trace, imgsz, batch, scale, nc);
        return 0;
    }
    std::printf("yolov8%c nc=%lld imgsz=%lld batch=%lld threads=%d, mean of %d iterations (CPU)\n",
                scale, static_cast<long long>(nc), static_cast<long long>(imgsz),
                static_cast<long long>(batch), threads, iterations);
    std::printf("%-22s %10s %10s %10s %10s %12s %14s %8s\n", "layout", "forward", "loss",
                "backward", "step", "fwd+bwd", "step/fwd+bwd", "img/s");
    struct Variant {
        const char* name;
        bool channels_last, fused;
    };
    // The last row is what training runs; the one before it shows what Crucible's fused CPU
    // kernels (core/engine/fused_kernels.h) change, where this CPU can run them.
    for (const Variant& v :
         {Variant{"NCHW", false, false}, Variant{"channels-last, unfused", true, false},
          Variant{"channels-last", true, true}}) {
        crucible::engine::set_fused_cpu_kernels_enabled(v.fused);
        const Phases p = run(v.channels_last, iterations, imgsz, batch, scale, nc);
        const double step = p.forward + p.loss + p.backward;
        std::printf("%-22s %8.1fms %8.1fms %8.1fms %8.1fms %10.1fms %14.3f %8.1f\n", v.name,
                    p.forward, p.loss, p.backward, step, p.pure, step / p.pure,
                    1000.0 * static_cast<double>(batch) / step);
    }
    crucible::engine::set_fused_cpu_kernels_enabled(true);
    return 0;
}
