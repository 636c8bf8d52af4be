// bench_distributed ([B2 6/8] item 9): YOLOv8n training on this machine's CPU as one process
// with 2 threads against 2 Gloo ranks with 1 thread each (the same global batch), through the
// real crucible-worker, runs interleaved; then the all-reduce of one step's gradients (the
// model's parameter count, float32) timed on its own, as a share of the 2-rank step. Figures come
// from one invocation: speed is the mean items/s of the progress events of each run's last
// epoch (the first warms up).
//   bench_distributed [rounds=2] [epochs=2] [imgsz=160] [batch=16] [train=64]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/base/child_process.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/worker_arguments.h"
#include "core/data/synth/synth.h"
#include "core/engine/distributed.h"
#include "core/jobs/rank_launcher.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace crucible;

namespace {

struct RunFigures {
    double items_per_s = 0;
    double wall_s = 0;
};

RunFigures train_once(const fs::path& dir, const Json& options, int epochs) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_json_file(JobFolder{dir}.spec(), Json{{"task", "detect.yolo"}, {"options", options}});
    ChildOptions co;
    co.program = CRUCIBLE_WORKER_EXE;
    co.args = worker_job_arguments(dir, false);
    co.log_file = dir / "bench.out";
    const auto start = std::chrono::steady_clock::now();
    const auto exit = ChildProcess::start(co)->wait();
    RunFigures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (exit.code != 0 || exit.signal != 0) {
        std::fprintf(stderr, "run in %s ended with %s\n", path_to_utf8(dir).c_str(),
                     exit.describe().c_str());
        std::exit(1);
    }
    double sum = 0;
    int n = 0;
    for (const auto& e : read_event_log(JobFolder{dir}.events()))
        if (e.kind == "progress" && e.fields.value("epoch", 0) == epochs) {
            sum += e.fields.value("items_per_s", 0.0);
            ++n;
        }
    f.items_per_s = n ? sum / n : 0;
    return f;
}

// Mean milliseconds of an all-reduce of `floats` float32 values between 2 ranks (two threads of
// this process, Gloo over loopback, as the ranks talk).
double allreduce_ms(std::int64_t floats, int repeats) {
    const int port = jobs::free_tcp_port("127.0.0.1");
    double ms = 0;
    std::thread other([&] {
        RankAddress a{1, 2, "127.0.0.1", port, "cpu"};
        auto c = engine::Collective::connect(a, std::chrono::seconds(60));
        auto t = torch::ones({floats});
        for (int k = 0; k < repeats + 1; ++k)
            c->sum(t);
    });
    RankAddress a{0, 2, "127.0.0.1", port, "cpu"};
    auto c = engine::Collective::connect(a, std::chrono::seconds(60));
    auto t = torch::ones({floats});
    c->sum(t);  // warm-up: connections, buffers
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < repeats; ++k)
        c->sum(t);
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         repeats;
    other.join();
    return ms;
}

}  // namespace

int main(int argc, char** argv) {
    std::map<std::string, int> cfg = {
        {"rounds", 2}, {"epochs", 2}, {"imgsz", 160}, {"batch", 16}, {"train", 64}};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto eq = a.find('=');
        if (eq == std::string::npos || !cfg.count(a.substr(0, eq))) {
            std::fprintf(stderr,
                         "usage: bench_distributed [rounds=N epochs=N imgsz=N batch=N train=N]\n");
            return 2;
        }
        cfg[a.substr(0, eq)] = std::stoi(a.substr(eq + 1));
    }
    const fs::path root = test_support::scratch_dir("bench_distributed");
    fs::remove_all(root);
    data::SynthOptions so;
    so.train = cfg["train"];
    so.val = 8;
    so.classes = 4;
    so.imgsz = cfg["imgsz"];
    const auto yaml = data::write_synth_dataset(root / "data", so);
    Json base = {{"data", path_to_utf8(yaml)},
                 {"model", "yolov8n.yaml"},
                 {"imgsz", cfg["imgsz"]},
                 {"epochs", cfg["epochs"]},
                 {"batch", cfg["batch"]},
                 {"amp", false},
                 {"val", false},
                 {"log_steps", 1},
                 {"checkpoint_steps", 0},
                 {"device", "cpu"}};
    Json single = base, ranks = base;
    single["workers"] = 2;
    ranks["workers"] = 1;
    ranks["ranks"] = 2;

    std::vector<RunFigures> one, two;
    for (int r = 0; r < cfg["rounds"]; ++r) {  // interleaved: drift hits both sides alike
        one.push_back(train_once(root / "single", single, cfg["epochs"]));
        two.push_back(train_once(root / "ranks", ranks, cfg["epochs"]));
    }
    const auto range = [](const std::vector<RunFigures>& v) {
        double lo = 1e30, hi = 0, sum = 0;
        for (const auto& f : v) {
            lo = std::min(lo, f.items_per_s);
            hi = std::max(hi, f.items_per_s);
            sum += f.items_per_s;
        }
        return std::array<double, 3>{lo, hi, sum / static_cast<double>(v.size())};
    };
    const auto a = range(one), b = range(two);
    const double batch = cfg["batch"];
    std::printf("YOLOv8n, imgsz %d, global batch %d, %d train images, CPU, %d rounds interleaved\n",
                cfg["imgsz"], cfg["batch"], cfg["train"], cfg["rounds"]);
    std::printf("%-34s %12s %14s %22s\n", "", "step (ms)", "samples/s", "samples/s range");
    std::printf("%-34s %12.1f %14.2f %10.2f .. %8.2f\n", "1 process, 2 threads",
                1000 * batch / a[2], a[2], a[0], a[1]);
    std::printf("%-34s %12.1f %14.2f %10.2f .. %8.2f\n", "2 Gloo ranks, 1 thread each",
                1000 * batch / b[2], b[2], b[0], b[1]);
    std::printf("ratio 2 ranks / 1 process: %.2fx (range %.2f .. %.2f)\n", b[2] / a[2], b[0] / a[1],
                b[1] / a[0]);
    // yolov8n: 3,157,200 parameters; the reducer all-reduces them once per optimizer step.
    const std::int64_t params = 3157200;
    const double ms = allreduce_ms(params, 10);
    const double step_ms = 1000 * batch / b[2];
    std::printf(
        "all-reduce of %lld float32 gradients between 2 ranks: %.1f ms = %.1f%% of the "
        "2-rank step (an upper bound: the reducer overlaps it with backward)\n",
        static_cast<long long>(params), ms, 100 * ms / step_ms);
    fs::remove_all(root);
    return 0;
}
