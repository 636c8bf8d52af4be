// `crucible dataset preview DATA --augment OUT.png [--seed S] [--imgsz S] [--n 16] [--split train]
// [--epoch E] [--mosaic P]`: draws a grid of training samples exactly as the loader makes them
// (mosaic, affine, HSV, flips) with their boxes and class names, so a person sees what training
// sees.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/dataset_io.h"
#include "core/data/draw_boxes.h"
#include "core/data/image_io.h"
#include "core/data/loader/batch_loader.h"

namespace crucible::cli {
namespace {

int run_preview(const std::vector<std::string>& args) {
    std::string data_path, out_path, split = "train";
    std::uint64_t seed = 0;
    int imgsz = 640, n = 16, epoch = 0;
    double mosaic = 1.0;
    CLI::App app{
        "Draws N augmented training samples in a grid with their boxes and class names, exactly\n"
        "as the loader makes them (mosaic, affine, HSV, flips).",
        "crucible dataset preview"};
    app.add_option("DATA", data_path, "a data.yaml, COCO .json or VOC folder")->required();
    app.add_option("--augment", out_path, "the image to write (OUT.png)")->required();
    app.add_option("--seed", seed, "loader seed")->capture_default_str()->check(non_negative());
    app.add_option("--imgsz", imgsz, "sample size in pixels")
        ->capture_default_str()
        ->check(CLI::Range(32, 4096));
    app.add_option("--n", n, "samples to draw")->capture_default_str()->check(CLI::Range(1, 256));
    app.add_option("--split", split, "split to draw from")->capture_default_str();
    app.add_option("--epoch", epoch, "epoch whose augmentation is shown")
        ->capture_default_str()
        ->check(CLI::Range(0, 1'000'000));
    app.add_option("--mosaic", mosaic, "mosaic probability")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    if (imgsz % 2) ++imgsz;

    const data::LoadResult loaded = data::load_detection_dataset(path_from_utf8(data_path));
    std::size_t errors = 0;
    for (const auto& p : loaded.problems)
        errors += p.error;
    if (errors)
        std::fprintf(stderr, "note: %zu dataset problems (run crucible dataset validate)\n",
                     errors);
    auto samples = data::loader_samples(loaded.dataset, split);
    if (samples.empty()) samples = data::loader_samples(loaded.dataset, "");
    if (samples.empty()) throw InputError(data_path, "no images to preview");
    const auto& names = loaded.dataset.class_names;

    data::LoaderOptions o;
    o.workers = 0;
    o.seed = seed;
    o.epochs = epoch + 1 + o.augment_options.close_mosaic;  // the epoch shown uses mosaic if P > 0
    o.augment_options.imgsz = imgsz;
    o.augment_options.mosaic = mosaic;
    std::size_t bad = 0;
    data::BatchLoader loader(samples, o, [&](const data::BadSample& b) {
        ++bad;
        std::fprintf(stderr, "skipped %s: %s\n", path_to_utf8(b.path).c_str(), b.message.c_str());
    });

    const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
    const int rows = (n + cols - 1) / cols;
    const int gap = 4;
    cv::Mat grid(rows * (imgsz + gap) + gap, cols * (imgsz + gap) + gap, CV_8UC3,
                 cv::Scalar(40, 40, 40));
    const auto order = loader.epoch_order(epoch);
    int drawn = 0;
    for (std::size_t k = 0; k < order.size() && drawn < n; ++k) {
        data::LabeledImage s = loader.make_sample(epoch, order[k]);
        if (s.image.empty()) continue;
        for (const auto& b : s.boxes)
            data::draw_labeled_box(s.image, b,
                                   b.cls >= 0 && static_cast<std::size_t>(b.cls) < names.size()
                                       ? names[static_cast<std::size_t>(b.cls)]
                                       : std::to_string(b.cls));
        const int r = drawn / cols, c = drawn % cols;
        s.image.copyTo(
            grid(cv::Rect(gap + c * (imgsz + gap), gap + r * (imgsz + gap), imgsz, imgsz)));
        ++drawn;
    }
    if (drawn == 0) throw InputError(data_path, "no readable images to preview");
    data::write_image(path_from_utf8(out_path), grid);
    std::printf("wrote %d augmented samples (epoch %d, seed %llu, imgsz %d) to %s%s\n", drawn,
                epoch, static_cast<unsigned long long>(seed), imgsz, out_path.c_str(),
                bad ? (" (" + std::to_string(bad) + " unreadable images skipped)").c_str() : "");
    return 0;
}

RegisterSubcommand reg({"dataset", "preview",
                        "draw a grid of augmented training samples with boxes", &run_preview});

}  // namespace
}  // namespace crucible::cli
