// Checkpoint write and load times for yolov8n and yolov8m: what the trainer stores (model, EMA,
// AdamW state with both moments, gradients, RNG) encoded, written atomically with fsync, read
// back, checksum-verified and restored into fresh modules. Prints MB and milliseconds per phase.
//
//   bench_checkpoint [scales=nm] [classes=80]   (best of three rounds per phase)
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/base/allocator.h"
#include "core/base/file_io.h"
#include "core/engine/checkpoint_file.h"
#include "core/engine/checkpoint_store.h"
#include "core/engine/tensor_state.h"
#include "plugins/detect/model/yolo_model.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void bench_scale(char scale, std::int64_t classes, const std::filesystem::path& dir) {
    torch::manual_seed(0);
    detect::DetectionModel model(detect::DetectionModelOptions(detect::yolo_scale(scale), classes));
    detect::DetectionModel ema(detect::DetectionModelOptions(detect::yolo_scale(scale), classes));
    torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));
    // One step on a small input so the optimizer holds both moments, as in training.
    model->train();
    const auto out = model->forward(torch::rand({1, 3, 64, 64}));
    torch::Tensor loss = torch::zeros({});
    for (const auto& t : out.levels)
        loss = loss + t.mean();
    loss.backward();
    optimizer.step();

    // Three rounds; the best of each phase is printed (the first round also pays for page
    // faults of fresh buffers and lazy initialisation).
    double encode = 1e300, write = 1e300, read = 1e300, restore = 1e300;
    std::size_t size = 0;
    for (int round = 0; round < 3; ++round) {
        auto t0 = Clock::now();
        engine::CheckpointData data;
        data.meta = {{"step", 1}};
        data.blobs["model"] = engine::module_to_bytes(*model);
        data.blobs["ema"] = engine::module_to_bytes(*ema);
        data.blobs["optimizer"] = engine::optimizer_to_bytes(optimizer);
        data.blobs["grads"] = engine::grads_to_bytes(*model);
        data.blobs["rng"] = engine::rng_to_bytes();
        const std::string bytes = engine::encode_checkpoint(data);
        encode = std::min(encode, ms_since(t0));
        const auto file = dir / (std::string("yolov8") + scale + ".ckpt");
        t0 = Clock::now();
        engine::write_checkpoint_atomically(file, bytes);
        write = std::min(write, ms_since(t0));
        t0 = Clock::now();
        const auto loaded = engine::decode_checkpoint(read_file_bytes(file), path_to_utf8(file));
        read = std::min(read, ms_since(t0));
        t0 = Clock::now();
        detect::DetectionModel fresh(
            detect::DetectionModelOptions(detect::yolo_scale(scale), classes));
        torch::optim::AdamW fresh_opt(fresh->parameters(), torch::optim::AdamWOptions(1e-3));
        engine::module_from_bytes(*fresh, loaded.blobs.at("model"));
        engine::optimizer_from_bytes(fresh_opt, loaded.blobs.at("optimizer"));
        restore = std::min(restore, ms_since(t0));
        size = bytes.size();
    }
    std::printf(
        "yolov8%c (%lld classes): checkpoint %.1f MB; encode %.0f ms, write+fsync %.0f ms "
        "(save %.0f ms); read+verify %.0f ms, build model + restore %.0f ms (load %.0f ms)\n",
        scale, static_cast<long long>(classes), static_cast<double>(size) / 1e6, encode, write,
        encode + write, read, restore, read + restore);
}

}  // namespace

int main(int argc, char** argv) {
    std::string scales = "nm";
    std::int64_t classes = 80;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("scales=", 0) == 0) scales = a.substr(7);
        if (a.rfind("classes=", 0) == 0) classes = std::atoll(a.c_str() + 8);
    }
    torch::set_num_threads(1);
    keep_freed_memory_for_reuse();  // as crucible-worker and `crucible train` run
    const test_support::TempDir dir("bench_checkpoint");
    for (char s : scales)
        bench_scale(s, classes, dir);
    return 0;
}
