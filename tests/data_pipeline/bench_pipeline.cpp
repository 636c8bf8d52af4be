// Throughput of the detection training pipeline (decode + mosaic + affine + HSV + flip + NCHW
// packing), imgsz 640, batch 16, on synthetic JPEGs made by the generator (640 px, or --source
// px: larger ones are decoded at a reduced DCT scale). Prints images/s
// for 1 and 2 worker threads with the RAM cache off and on, decode-only images/s, a per-stage
// breakdown on one thread, and each figure's ratio to the reference (the Python YOLOv8 pipeline,
// about 150 images/s on one core).
//
//   bench_pipeline [--images N] [--seconds S] [--threads "1 2"] [--source 640] [--dir FOLDER]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <time.h>
#else
#include <ctime>
#endif

#include "core/base/allocator.h"
#include "core/base/file_io.h"
#include "core/data/augment/augment.h"
#include "core/data/image_io.h"
#include "core/data/loader/batch_loader.h"
#include "core/data/synth/synth.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace crucible;
using namespace crucible::data;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kReference = 150.0;  // images/s, Python pipeline, one core

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the whole process (all threads). On a shared machine the wall clock measures the
// other users too; images per CPU-second is what one core achieves.
double process_cpu_seconds() {
#if defined(__unix__) || defined(__APPLE__)
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
#else
    return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
#endif
}

// CPU time of the calling thread (stage breakdown).
double thread_cpu_seconds() {
#if defined(__unix__) || defined(__APPLE__)
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
#else
    return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
#endif
}

struct Rate {
    double wall = 0;     // images per wall second
    double cpu = 0;      // images per CPU second (= per busy core)
    double decodes = 0;  // image files decoded per image made (mosaic partners included)
};

// Runs full epochs until `seconds` have passed; returns images/s.
Rate loader_rate(const std::vector<LoaderSample>& samples, int threads, bool cache,
                 double seconds) {
    LoaderOptions o;
    o.batch_size = 16;
    o.workers = threads;
    o.prefetch = 2 * threads + 2;
    o.cache = cache;
    o.epochs = 1000;
    o.seed = 1;
    BatchLoader loader(samples, o);
    int epoch = 0;
    if (cache) {  // fill the cache first (the measured pipeline reads decoded images)
        loader.start_epoch({epoch++, 0});
        while (loader.next()) {
        }
    }
    std::int64_t images = 0;
    std::uint64_t sink = 0;
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    while (seconds_since(t0) < seconds) {
        loader.start_epoch({epoch++, 0});
        while (auto b = loader.next()) {
            images += b->size;
            sink += b->pixels[b->pixels.size() / 2];
            loader.recycle(std::move(*b));
        }
    }
    Rate rate;
    rate.wall = static_cast<double>(images) / seconds_since(t0);
    rate.cpu = static_cast<double>(images) / (process_cpu_seconds() - c0);
    rate.decodes = static_cast<double>(loader.stats().decoded) /
                   static_cast<double>(std::max<std::int64_t>(1, images));
    if (sink == 1) std::printf(" ");
    return rate;
}

void print_rate(const char* what, Rate rate, int threads) {
    std::printf(
        "%-40s wall %7.1f img/s (%6.1f per thread, %.2fx)   per CPU-second %7.1f img/s (%.2fx of "
        "150)",
        what, rate.wall, rate.wall / threads, rate.wall / threads / kReference, rate.cpu,
        rate.cpu / kReference);
    if (rate.decodes > 0) std::printf("   %.2f decodes per image", rate.decodes);
    std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
    int count = 64;
    int source = 640;
    double seconds = 4;
    std::vector<int> thread_counts = {1, 2};
    fs::path dir;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--images")
            count = std::atoi(argv[i + 1]);
        else if (a == "--seconds")
            seconds = std::atof(argv[i + 1]);
        else if (a == "--source")
            source = std::atoi(argv[i + 1]);
        else if (a == "--dir")
            dir = argv[i + 1];
        else if (a == "--threads") {
            thread_counts.clear();
            std::istringstream in(argv[i + 1]);
            for (int t; in >> t;)
                thread_counts.push_back(t);
        }
    }
    crucible::keep_freed_memory_for_reuse();  // as training does (core/engine/trainer.cpp)
    const bool own_dir = dir.empty();
    if (own_dir) dir = test_support::scratch_dir("bench_pipeline");
    SynthOptions so;
    so.train = count;
    so.val = 0;
    so.classes = 8;
    so.imgsz = source;
    so.seed = 1;
    if (!fs::exists(dir / "data.yaml")) {
        const auto t0 = Clock::now();
        write_synth_dataset(dir, so);
        std::printf("synthetic dataset: %d JPEGs of %d px in %.1f s (%s)\n", count, source,
                    seconds_since(t0), path_to_utf8(dir).c_str());
    }
    std::vector<LoaderSample> samples;
    std::uint64_t bytes = 0;
    for (int i = 0; i < count; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "%06d.jpg", i);
        samples.push_back(
            {dir / "images" / "train" / name, make_synth_sample(so, "train", i).boxes});
        bytes += fs::file_size(samples.back().path);
    }
    std::printf("images: %d, mean JPEG %.0f kB; OpenCV %s; reference %.0f img/s per core\n\n",
                count, static_cast<double>(bytes) / 1024.0 / count, CV_VERSION, kReference);
    cv::setNumThreads(0);

    // Decode only (one thread): read the file and decode it, as the loader does.
    {
        std::int64_t n = 0;
        const auto t0 = Clock::now();
        const double c0 = process_cpu_seconds();
        while (seconds_since(t0) < seconds / 2)
            for (const auto& s : samples)
                n += read_image(s.path, {}, 640).cols > 0;
        print_rate("decode only (read + decode), 1 thread",
                   Rate{static_cast<double>(n) / seconds_since(t0),
                        static_cast<double>(n) / (process_cpu_seconds() - c0)},
                   1);
    }

    // Per-stage breakdown on one thread, from decoded + resized images.
    {
        std::vector<LabeledImage> resized;
        for (const auto& s : samples)
            resized.push_back(resize_long_side(read_image(s.path, {}, 640), s.boxes, 640));
        AugmentOptions o;
        double t_mosaic = 0, t_affine = 0, t_fused = 0, t_hsv = 0, t_hsv_opencv = 0, t_flip = 0,
               t_pack = 0;
        const int reps = 200;
        std::vector<std::uint8_t> buffer(3 * 640 * 640);
        for (int r = 0; r < reps; ++r) {
            Rng rng(derive_seed({7, static_cast<std::uint64_t>(r)}));
            const LabeledImage* parts[4];
            for (auto& p : parts)
                p = &resized[static_cast<std::size_t>(rng.uniform_int(0, count - 1))];
            Rng fused_rng = rng;
            double t = thread_cpu_seconds();
            const LabeledImage fused = mosaic_affine(parts, o, fused_rng);
            t_fused += thread_cpu_seconds() - t;
            t = thread_cpu_seconds();
            const LabeledImage canvas = mosaic4(parts, 640, 114, rng);
            t_mosaic += thread_cpu_seconds() - t;
            t = thread_cpu_seconds();
            double sc = 1;
            const cv::Matx33d M = random_affine_matrix(o, 1280, 1280, 640, 640, rng, &sc);
            LabeledImage out = apply_affine(canvas, M, 640, 640, sc, o);
            t_affine += thread_cpu_seconds() - t;
            {  // OpenCV's conversion pair, the reference's way, on a copy, for the ratio
                cv::Mat copy = out.image.clone();
                Rng same = rng;
                const HsvGains gains = draw_hsv_gains(o.hsv_h, o.hsv_s, o.hsv_v, same);
                t = thread_cpu_seconds();
                apply_hsv_gains_opencv(copy, gains);
                t_hsv_opencv += thread_cpu_seconds() - t;
            }
            t = thread_cpu_seconds();
            augment_hsv(out.image, o.hsv_h, o.hsv_s, o.hsv_v, rng);
            t_hsv += thread_cpu_seconds() - t;
            t = thread_cpu_seconds();
            if (rng.chance(0.5)) flip_horizontal(out);
            t_flip += thread_cpu_seconds() - t;
            t = thread_cpu_seconds();
            cv::Mat planes[3] = {cv::Mat(640, 640, CV_8U, buffer.data() + 2 * 640 * 640),
                                 cv::Mat(640, 640, CV_8U, buffer.data() + 640 * 640),
                                 cv::Mat(640, 640, CV_8U, buffer.data())};
            cv::split(out.image, planes);
            t_pack += thread_cpu_seconds() - t;
        }
        std::printf(
            "stages, CPU ms per sample (1 thread): full canvas: mosaic %.2f + affine %.2f;  "
            "fused mosaic+affine (what the loader runs) %.2f;  hsv %.2f  flip %.2f  pack %.2f\n"
            "hsv: what the loader runs %.2f against OpenCV's conversion pair %.2f (%.2fx)\n\n",
            1e3 * t_mosaic / reps, 1e3 * t_affine / reps, 1e3 * t_fused / reps, 1e3 * t_hsv / reps,
            1e3 * t_flip / reps, 1e3 * t_pack / reps, 1e3 * t_hsv / reps, 1e3 * t_hsv_opencv / reps,
            t_hsv_opencv / t_hsv);
    }

    for (bool cache : {true, false}) {
        Rate first;
        for (int t : thread_counts) {
            const Rate rate = loader_rate(samples, t, cache, seconds);
            char what[96];
            std::snprintf(what, sizeof what, "full pipeline, cache %s, %d thread%s",
                          cache ? "on " : "off", t, t > 1 ? "s" : "");
            print_rate(what, rate, t);
            if (t == thread_counts.front()) {
                first = Rate{rate.wall / t, rate.cpu};
            } else {
                std::printf("%-40s wall %.2f   CPU %.2f   (1.00 = linear)\n",
                            "  scaling efficiency per thread", rate.wall / t / first.wall,
                            rate.cpu / first.cpu);
            }
        }
    }
    if (own_dir) fs::remove_all(dir);
    return 0;
}
