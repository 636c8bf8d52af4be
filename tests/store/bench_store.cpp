// Project store benchmark (not run by ctest):
//   1. import of a 10,000-image YOLO dataset folder (annotations parsed by core/data; 2 KB random
//      bytes per image: hashing does not decode) — images/s and MB/s, against plain SHA-256 of the
//      same files as the baseline;
//   2. appending events of one run in batches (goal: 10,000 events/s sustained);
//   3. reading 1,000,000 events of one run into plot series (goal: under 1 s).
// Usage: bench_store [images=10000] [events=1000000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "core/base/sha256.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace {

using namespace crucible;
using namespace crucible::store;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this process: on a shared, loaded machine wall time overstates the cost.
double cpu_seconds() {
    return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

int run(int argc, char** argv) {
    const std::size_t images = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 10000;
    const std::int64_t events = argc > 2 ? std::strtoll(argv[2], nullptr, 10) : 1000000;
    test::TempDir dir("bench");

    auto t0 = Clock::now();
    auto generated = test::make_dataset(dir / "gen", images, 2048);
    // A real YOLO folder (data.yaml + labels/*.txt), written by core/data.
    data::save_detection_dataset(generated, dir / "yolo", data::DatasetFormat::Yolo);
    std::printf("generate: %zu images of 2 KB as a YOLO dataset in %.2f s\n", images,
                seconds_since(t0));
    t0 = Clock::now();
    auto loaded = data::load_detection_dataset(dir / "yolo", data::DatasetFormat::Yolo);
    const auto& ds = loaded.dataset;
    std::printf("  parse annotations alone: %.2f s (%zu images)\n", seconds_since(t0),
                ds.images.size());

    // Baseline: hashing the same files without any database work.
    t0 = Clock::now();
    for (const auto& img : ds.images)
        sha256_file(ds.root / img.path);
    double hash_s = seconds_since(t0);

    auto project = Project::create(dir / "bench.crucible");
    t0 = Clock::now();
    double c0 = cpu_seconds();
    auto r = import_dataset_from(*project, dir / "yolo", "yolo", {.name = "bench"});
    double import_s = seconds_since(t0);
    double import_cpu = cpu_seconds() - c0;
    double mb = static_cast<double>(r.bytes) / 1e6;
    std::printf(
        "import (parse + hash + store): %zu images, %zu boxes, %.1f MB in %.2f s = %.0f images/s, "
        "%.1f MB/s\n",
        r.images, r.boxes, mb, import_s, static_cast<double>(r.images) / import_s, mb / import_s);
    std::printf("  cpu %.2f s = %.0f images/s, %.1f MB/s per core\n", import_cpu,
                static_cast<double>(r.images) / import_cpu, mb / import_cpu);
    std::printf("  baseline sha256 only: %.2f s; import / hashing = %.2fx\n", hash_s,
                import_s / hash_s);

    auto run_id = create_run(*project, {.name = "bench", .task = "detect.yolo"});
    const std::int64_t batch = 1000;
    std::vector<Event> chunk;
    t0 = Clock::now();
    c0 = cpu_seconds();
    double worst_batch_s = 0;
    for (std::int64_t seq = 0; seq < events;) {
        chunk.clear();
        for (std::int64_t k = 0; k < batch && seq < events; ++k, ++seq) {
            Event e = make_metric(
                static_cast<int>(seq / 1000), seq,
                Json{{"train/box_loss", 1.0 / static_cast<double>(seq + 1)}, {"lr/pg0", 0.01}});
            e.seq = seq;
            e.t = 1.7e9 + static_cast<double>(seq) * 0.01;
            chunk.push_back(std::move(e));
        }
        auto tb = Clock::now();
        append_events(*project, run_id, chunk);
        worst_batch_s = std::max(worst_batch_s, seconds_since(tb));
    }
    double append_s = seconds_since(t0);
    double append_cpu = cpu_seconds() - c0;
    std::printf(
        "append: %lld metric events (2 values each) in batches of %lld: %.2f s = %.0f events/s "
        "(goal 10000); slowest batch %.1f ms\n",
        static_cast<long long>(events), static_cast<long long>(batch), append_s,
        static_cast<double>(events) / append_s, worst_batch_s * 1e3);

    std::printf("  cpu %.2f s = %.0f events/s per core\n", append_cpu,
                static_cast<double>(events) / append_cpu);

    // Small batches, as a live SSE stream would deliver them.
    auto run2 = create_run(*project, {.name = "live", .task = "detect.yolo"});
    const std::int64_t live = 20000;
    t0 = Clock::now();
    for (std::int64_t seq = 0; seq < live; seq += 10) {
        chunk.clear();
        for (std::int64_t k = seq; k < seq + 10; ++k) {
            Event e = make_metric(0, k, Json{{"train/box_loss", 1.0}});
            e.seq = k;
            e.t = 1.7e9;
            chunk.push_back(std::move(e));
        }
        append_events(*project, run2, chunk);
    }
    double live_s = seconds_since(t0);
    std::printf("append: %lld events in batches of 10: %.0f events/s\n",
                static_cast<long long>(live), static_cast<double>(live) / live_s);

    t0 = Clock::now();
    c0 = cpu_seconds();
    auto series = read_series(*project, run_id);
    double read_s = seconds_since(t0);
    double read_cpu = cpu_seconds() - c0;
    std::size_t points = 0;
    for (const auto& [name, s] : series)
        points += s.size();
    std::printf("read series: %lld events -> %zu series, %zu points in %.3f s (goal < 1 s)\n",
                static_cast<long long>(events), series.size(), points, read_s);
    t0 = Clock::now();
    std::printf("  cpu %.3f s\n", read_cpu);
    t0 = Clock::now();
    c0 = cpu_seconds();
    series = read_series(*project, run_id);
    std::printf("  read series again: %.3f s, cpu %.3f s\n", seconds_since(t0), cpu_seconds() - c0);
    t0 = Clock::now();
    auto all = read_events(*project, run_id);
    double json_s = seconds_since(t0);
    std::printf("  baseline read+parse of the JSON records: %.3f s; series / JSON = %.2fx\n",
                json_s, read_s / json_s);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("bench_store", run, argc, argv);
}
