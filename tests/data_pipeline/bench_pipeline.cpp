// Throughput of the detection training pipeline (decode + mosaic + affine + HSV + flip + NCHW
// packing), imgsz 640, batch 16, on synthetic 640-px JPEGs made by the generator. Prints images/s
// for 1 and 2 worker threads with the RAM cache off and on, decode-only images/s, a per-stage
// breakdown on one thread, and each figure's ratio to the reference (the Python YOLOv8 pipeline,
// about 150 images/s on one core).
//
//   bench_pipeline [--images N] [--seconds S] [--threads "1 2"] [--dir FOLDER]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/base/file_io.h"
#include "core/data/augment/augment.h"
#include "core/data/image_io.h"
#include "core/data/loader/batch_loader.h"
#include "core/data/synth/synth.h"

namespace fs = std::filesystem;
using namespace crucible;
using namespace crucible::data;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kReference = 150.0;  // images/s, Python pipeline, one core

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Runs full epochs until `seconds` have passed; returns images/s.
double loader_rate(const std::vector<LoaderSample>& samples, int threads, bool cache,
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
    while (seconds_since(t0) < seconds) {
        loader.start_epoch({epoch++, 0});
        while (auto b = loader.next()) {
            images += b->size;
            sink += b->pixels[b->pixels.size() / 2];
        }
    }
    const double rate = images / seconds_since(t0);
    if (sink == 1) std::printf(" ");
    return rate;
}

void print_rate(const char* what, double rate, int threads) {
    std::printf("%-44s %8.1f img/s   per thread %7.1f   ratio to 150/thread %.2fx\n", what, rate,
                rate / threads, rate / threads / kReference);
}

}  // namespace

int main(int argc, char** argv) {
    int count = 64;
    double seconds = 4;
    std::vector<int> thread_counts = {1, 2};
    fs::path dir;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--images")
            count = std::atoi(argv[i + 1]);
        else if (a == "--seconds")
            seconds = std::atof(argv[i + 1]);
        else if (a == "--dir")
            dir = argv[i + 1];
        else if (a == "--threads") {
            thread_counts.clear();
            std::istringstream in(argv[i + 1]);
            for (int t; in >> t;)
                thread_counts.push_back(t);
        }
    }
    const bool own_dir = dir.empty();
    if (own_dir)
        dir = fs::temp_directory_path() /
              ("crucible_bench_pipeline_" + std::to_string(platform::process_id()));
    SynthOptions so;
    so.train = count;
    so.val = 0;
    so.classes = 8;
    so.imgsz = 640;
    so.seed = 1;
    if (!fs::exists(dir / "data.yaml")) {
        const auto t0 = Clock::now();
        write_synth_dataset(dir, so);
        std::printf("synthetic dataset: %d JPEGs of 640 px in %.1f s (%s)\n", count,
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
                count, bytes / 1024.0 / count, CV_VERSION, kReference);
    cv::setNumThreads(0);

    // Decode only (one thread): read file + imdecode, as the loader does.
    {
        std::int64_t n = 0;
        const auto t0 = Clock::now();
        while (seconds_since(t0) < seconds / 2)
            for (const auto& s : samples)
                n += read_image(s.path).cols > 0;
        print_rate("decode only (read + imdecode), 1 thread", n / seconds_since(t0), 1);
    }

    // Per-stage breakdown on one thread, from decoded + resized images.
    {
        std::vector<LabeledImage> resized;
        for (const auto& s : samples)
            resized.push_back(resize_long_side(read_image(s.path), s.boxes, 640));
        AugmentOptions o;
        double t_mosaic = 0, t_affine = 0, t_hsv = 0, t_flip = 0, t_pack = 0;
        const int reps = 200;
        std::vector<std::uint8_t> buffer(3 * 640 * 640);
        for (int r = 0; r < reps; ++r) {
            Rng rng(derive_seed({7, static_cast<std::uint64_t>(r)}));
            const LabeledImage* parts[4];
            for (auto& p : parts)
                p = &resized[static_cast<std::size_t>(rng.uniform_int(0, count - 1))];
            auto t = Clock::now();
            const LabeledImage canvas = mosaic4(parts, 640, 114, rng);
            t_mosaic += seconds_since(t);
            t = Clock::now();
            double sc = 1;
            const cv::Matx33d M = random_affine_matrix(o, 1280, 1280, 640, 640, rng, &sc);
            LabeledImage out = apply_affine(canvas, M, 640, 640, sc, o);
            t_affine += seconds_since(t);
            t = Clock::now();
            augment_hsv(out.image, o.hsv_h, o.hsv_s, o.hsv_v, rng);
            t_hsv += seconds_since(t);
            t = Clock::now();
            if (rng.chance(0.5)) flip_horizontal(out);
            t_flip += seconds_since(t);
            t = Clock::now();
            cv::Mat planes[3] = {cv::Mat(640, 640, CV_8U, buffer.data() + 2 * 640 * 640),
                                 cv::Mat(640, 640, CV_8U, buffer.data() + 640 * 640),
                                 cv::Mat(640, 640, CV_8U, buffer.data())};
            cv::split(out.image, planes);
            t_pack += seconds_since(t);
        }
        std::printf(
            "stages, ms per sample (1 thread): mosaic %.2f  affine %.2f  hsv %.2f  flip %.2f  pack "
            "%.2f\n\n",
            1e3 * t_mosaic / reps, 1e3 * t_affine / reps, 1e3 * t_hsv / reps, 1e3 * t_flip / reps,
            1e3 * t_pack / reps);
    }

    for (bool cache : {true, false}) {
        double first = 0;
        for (int t : thread_counts) {
            const double rate = loader_rate(samples, t, cache, seconds);
            char what[96];
            std::snprintf(what, sizeof what, "full pipeline, cache %s, %d thread%s",
                          cache ? "on " : "off", t, t > 1 ? "s" : "");
            print_rate(what, rate, t);
            if (t == thread_counts.front())
                first = rate / t;
            else
                std::printf("%-44s %8.2f (1.00 = linear)\n", "  scaling efficiency per thread",
                            rate / t / first);
        }
    }
    if (own_dir) fs::remove_all(dir);
    return 0;
}
