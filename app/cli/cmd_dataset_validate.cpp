// `crucible dataset validate | convert | manifest | split | dedupe`: the detection dataset
// tools over core/data (formats, validation, operations).
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/dataset_io.h"
#include "core/data/ops/dataset_ops.h"
#include "core/data/validate.h"

namespace crucible::cli {
namespace {

namespace fs = std::filesystem;

// How a tool reads its source dataset: the flags most tools share, added to each tool's app.
struct Reading {
    std::string format = "auto";
    bool allow_outside_root = false;
    std::uint64_t max_pixels = 0;
    const CLI::Option* max_pixels_given = nullptr;  // only validate takes --max-pixels

    void add_to(CLI::App& app, const char* format_flag = "--format") {
        app.add_option(format_flag, format, "the source's format: auto, yolo, coco or voc")
            ->capture_default_str();
        app.add_flag("--allow-outside-root", allow_outside_root,
                     "read images that lie outside the dataset's folder");
    }
    void add_max_pixels(CLI::App& app) {
        max_pixels_given =
            app.add_option("--max-pixels", max_pixels, "refuse images with more pixels")
                ->check(non_negative());
    }
    data::DatasetFormat dataset_format() const { return data::parse_dataset_format(format); }
    data::LoadOptions options() const {
        data::LoadOptions o;
        o.allow_outside_root = allow_outside_root;
        if (max_pixels_given && max_pixels_given->count() > 0)
            o.image_limits.max_pixels = max_pixels;
        return o;
    }
};

void print_problems(const std::vector<data::DatasetProblem>& problems, std::size_t limit = 50) {
    std::size_t shown = 0;
    for (const auto& p : problems) {
        if (shown++ == limit) {
            std::fprintf(stderr, "... %zu more problems (crucible dataset validate lists all)\n",
                         problems.size() - limit);
            break;
        }
        std::fprintf(stderr, "%s: %s: %s\n", p.where.c_str(), p.error ? "error" : "warning",
                     p.what.c_str());
    }
}

data::LoadResult load_or_throw(const fs::path& path, data::DatasetFormat format,
                               const data::LoadOptions& options) {
    auto loaded = data::load_detection_dataset(path, format, options);
    print_problems(loaded.problems);
    if (loaded.dropped_images > 0)
        std::fprintf(stderr, "%zu images dropped for errors; %zu usable\n", loaded.dropped_images,
                     loaded.dataset.images.size());
    return loaded;
}

void refuse_non_empty(const fs::path& out) {
    std::error_code ec;
    if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
        throw InputError(path_to_utf8(out), "output exists and is not an empty folder");
}

int run_validate(const std::vector<std::string>& words) {
    CLI::App app{
        "Checks every image and label: missing or unreadable images, truncated JPEG/PNG, label "
        "rows\n"
        "with the wrong column count, non-numbers, out-of-range coordinates, unknown class ids,\n"
        "duplicate rows. Each problem is printed with file:line, then statistics. The exit code "
        "is\n"
        "1 when there are errors (warnings and background images do not count).",
        "crucible dataset validate"};
    std::string path;
    bool json = false;
    Reading reading;
    app.add_option("PATH", path, "a data.yaml, COCO .json or VOC folder")->required();
    reading.add_to(app);
    reading.add_max_pixels(app);
    app.add_flag("--json", json, "print the report as JSON");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const auto report =
        data::validate_dataset(path_from_utf8(path), reading.dataset_format(), reading.options());
    if (json)
        std::printf("%s\n",
                    report.to_json().dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    else
        std::printf("%s", report.to_text().c_str());
    return report.ok() ? 0 : 1;
}

int run_convert(const std::vector<std::string>& words) {
    CLI::App app{
        "Reads SRC and writes its usable images and labels to the empty folder OUT in\n"
        "another format.",
        "crucible dataset convert"};
    std::string src, out_path, to;
    Reading reading;
    app.add_option("SRC", src, "the dataset to read")->required();
    app.add_option("OUT", out_path, "an empty or new folder")->required();
    app.add_option("--to", to, "yolo, coco or voc")->required();
    reading.add_to(app, "--from");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const auto to_format = data::parse_dataset_format(to);
    if (to_format == data::DatasetFormat::Auto)
        throw InputError("--to", "choose yolo, coco or voc");
    const fs::path out = path_from_utf8(out_path);
    refuse_non_empty(out);
    const auto loaded =
        load_or_throw(path_from_utf8(src), reading.dataset_format(), reading.options());
    const auto main = data::save_detection_dataset(loaded.dataset, out, to_format);
    std::printf("wrote %zu images, %zu classes as %s: %s\n", loaded.dataset.images.size(),
                loaded.dataset.class_names.size(), data::dataset_format_name(to_format),
                path_to_utf8(main).c_str());
    return 0;
}

int run_manifest(const std::vector<std::string>& words) {
    CLI::App app{
        "Prints the dataset version id: the SHA-256 of the canonical manifest (sorted image\n"
        "hashes and annotations).",
        "crucible dataset manifest"};
    std::string path, out;
    Reading reading;
    app.add_option("PATH", path, "the dataset")->required();
    reading.add_to(app);
    app.add_option("--out", out, "also write the manifest itself to this file");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    auto loaded = load_or_throw(path_from_utf8(path), reading.dataset_format(), reading.options());
    const Json manifest = data::dataset_manifest(loaded.dataset);
    if (!out.empty())
        write_file_atomically(path_from_utf8(out), data::manifest_text(manifest) + "\n");
    std::printf("%s\n", data::manifest_id(manifest).c_str());
    return 0;
}

int run_split(const std::vector<std::string>& words) {
    CLI::App app{
        "Writes SRC to OUT with a new stratified train/val split (every class in val in\n"
        "proportion); the same seed gives the same split.",
        "crucible dataset split"};
    std::string src, out_path, to = "yolo";
    double fraction = 0.2;
    std::uint64_t seed = 0;
    Reading reading;
    app.add_option("SRC", src, "the dataset to read")->required();
    app.add_option("OUT", out_path, "an empty or new folder")->required();
    app.add_option("--val", fraction, "the fraction of images in val")->capture_default_str();
    app.add_option("--seed", seed, "split seed")->capture_default_str()->check(non_negative());
    app.add_option("--to", to, "the format written: yolo, coco or voc")->capture_default_str();
    reading.add_to(app);
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const fs::path out = path_from_utf8(out_path);
    refuse_non_empty(out);
    auto loaded = load_or_throw(path_from_utf8(src), reading.dataset_format(), reading.options());
    data::split_train_val(loaded.dataset, fraction, seed);
    const auto main =
        data::save_detection_dataset(loaded.dataset, out, data::parse_dataset_format(to));
    const auto stats = data::compute_stats(loaded.dataset);
    std::printf("train %zu, val %zu: %s\n",
                stats.images_per_split.count("train") ? stats.images_per_split.at("train") : 0,
                stats.images_per_split.count("val") ? stats.images_per_split.at("val") : 0,
                path_to_utf8(main).c_str());
    return 0;
}

int run_dedupe(const std::vector<std::string>& words) {
    CLI::App app{
        "Lists images with identical bytes (SHA-256). --out writes the dataset without the\n"
        "repeats (the first of each group is kept).",
        "crucible dataset dedupe"};
    std::string path, out_path, to = "yolo";
    Reading reading;
    app.add_option("PATH", path, "the dataset")->required();
    app.add_option("--out", out_path, "write the dataset without repeats to this folder");
    app.add_option("--to", to, "the format written: yolo, coco or voc")->capture_default_str();
    reading.add_to(app);
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    auto loaded = load_or_throw(path_from_utf8(path), reading.dataset_format(), reading.options());
    auto& ds = loaded.dataset;
    const auto groups = data::find_duplicate_images(ds);
    for (const auto& g : groups) {
        std::printf("%s\n", ds.images[g[0]].sha256.c_str());
        for (auto i : g)
            std::printf("  %s\n", path_to_utf8(ds.images[i].path).c_str());
    }
    std::printf("%zu groups of duplicate images\n", groups.size());
    if (!out_path.empty()) {
        const fs::path out = path_from_utf8(out_path);
        refuse_non_empty(out);
        const std::size_t removed = data::remove_duplicate_images(ds);
        const auto main = data::save_detection_dataset(ds, out, data::parse_dataset_format(to));
        std::printf("removed %zu images: %s\n", removed, path_to_utf8(main).c_str());
    }
    return 0;
}

RegisterSubcommand reg_validate({"dataset", "validate",
                                 "check a detection dataset (every problem with file:line, stats)",
                                 &run_validate});
RegisterSubcommand reg_convert({"dataset", "convert", "convert between YOLO, COCO and Pascal VOC",
                                &run_convert});
RegisterSubcommand reg_manifest({"dataset", "manifest",
                                 "print the dataset version id (manifest SHA-256)", &run_manifest});
RegisterSubcommand reg_split({"dataset", "split", "write a stratified train/val split by seed",
                              &run_split});
RegisterSubcommand reg_dedupe({"dataset", "dedupe", "find (and drop) duplicate images by SHA-256",
                               &run_dedupe});

}  // namespace
}  // namespace crucible::cli
