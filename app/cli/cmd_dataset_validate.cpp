// `crucible dataset validate | convert | manifest | split | dedupe`: the detection dataset
// tools over core/data (formats, validation, operations).
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

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

// Flags with values, boolean switches and positional words of one subcommand.
struct Args {
    std::vector<std::string> positional;
    std::map<std::string, std::string> values;
    std::set<std::string> switches;
    bool help = false;
};

Args parse_args(const std::vector<std::string>& words, const std::set<std::string>& value_flags,
                const std::set<std::string>& switch_flags, const char* usage) {
    Args a;
    for (std::size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i];
        if (w == "-h" || w == "--help") {
            a.help = true;
        } else if (value_flags.count(w)) {
            if (i + 1 >= words.size()) throw InputError(w, "needs a value");
            a.values[w] = words[++i];
        } else if (switch_flags.count(w)) {
            a.switches.insert(w);
        } else if (w.rfind("--", 0) == 0) {
            throw InputError(w, std::string("unknown option\n") + usage);
        } else {
            a.positional.push_back(w);
        }
    }
    return a;
}

data::DatasetFormat format_flag(const Args& a, const std::string& flag,
                                data::DatasetFormat fallback) {
    auto it = a.values.find(flag);
    return it == a.values.end() ? fallback : data::parse_dataset_format(it->second);
}

data::LoadOptions load_options(const Args& a) {
    data::LoadOptions o;
    o.allow_outside_root = a.switches.count("--allow-outside-root") > 0;
    if (auto it = a.values.find("--max-pixels"); it != a.values.end()) {
        try {
            o.image_limits.max_pixels = std::stoull(it->second);
        } catch (const std::exception&) {
            throw InputError("--max-pixels", "expects a positive integer");
        }
    }
    return o;
}

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

const char* kValidateUsage =
    "usage: crucible dataset validate PATH [--format auto|yolo|coco|voc] [--json]\n"
    "                                 [--max-pixels N] [--allow-outside-root]\n\n"
    "Checks every image and label: missing or unreadable images, truncated JPEG/PNG, label rows\n"
    "with the wrong column count, non-numbers, out-of-range coordinates, unknown class ids,\n"
    "duplicate rows. Each problem is printed with file:line, then statistics. The exit code is\n"
    "1 when there are errors (warnings and background images do not count).\n";

int run_validate(const std::vector<std::string>& words) {
    const auto a = parse_args(words, {"--format", "--max-pixels"},
                              {"--json", "--allow-outside-root"}, kValidateUsage);
    if (a.help) {
        std::printf("%s", kValidateUsage);
        return 0;
    }
    if (a.positional.size() != 1)
        throw InputError("PATH", std::string("expects one dataset path\n") + kValidateUsage);
    const auto report = data::validate_dataset(
        path_from_utf8(a.positional[0]), format_flag(a, "--format", data::DatasetFormat::Auto),
        load_options(a));
    if (a.switches.count("--json"))
        std::printf("%s\n",
                    report.to_json().dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    else
        std::printf("%s", report.to_text().c_str());
    return report.ok() ? 0 : 1;
}

const char* kConvertUsage =
    "usage: crucible dataset convert SRC OUT --to yolo|coco|voc [--from auto|yolo|coco|voc]\n"
    "                                [--allow-outside-root]\n\n"
    "Reads SRC and writes its usable images and labels to the empty folder OUT in another "
    "format.\n";

int run_convert(const std::vector<std::string>& words) {
    const auto a = parse_args(words, {"--to", "--from"}, {"--allow-outside-root"}, kConvertUsage);
    if (a.help) {
        std::printf("%s", kConvertUsage);
        return 0;
    }
    if (a.positional.size() != 2)
        throw InputError("SRC OUT", std::string("expects two paths\n") + kConvertUsage);
    if (!a.values.count("--to"))
        throw InputError("--to", std::string("is required\n") + kConvertUsage);
    const auto to = data::parse_dataset_format(a.values.at("--to"));
    if (to == data::DatasetFormat::Auto) throw InputError("--to", "choose yolo, coco or voc");
    const fs::path out = path_from_utf8(a.positional[1]);
    refuse_non_empty(out);
    const auto loaded =
        load_or_throw(path_from_utf8(a.positional[0]),
                      format_flag(a, "--from", data::DatasetFormat::Auto), load_options(a));
    const auto main = data::save_detection_dataset(loaded.dataset, out, to);
    std::printf("wrote %zu images, %zu classes as %s: %s\n", loaded.dataset.images.size(),
                loaded.dataset.class_names.size(), data::dataset_format_name(to),
                path_to_utf8(main).c_str());
    return 0;
}

const char* kManifestUsage =
    "usage: crucible dataset manifest PATH [--format F] [--out FILE] [--allow-outside-root]\n\n"
    "Prints the dataset version id: the SHA-256 of the canonical manifest (sorted image hashes "
    "and\n"
    "annotations). --out writes the manifest itself.\n";

int run_manifest(const std::vector<std::string>& words) {
    const auto a =
        parse_args(words, {"--format", "--out"}, {"--allow-outside-root"}, kManifestUsage);
    if (a.help) {
        std::printf("%s", kManifestUsage);
        return 0;
    }
    if (a.positional.size() != 1)
        throw InputError("PATH", std::string("expects one dataset path\n") + kManifestUsage);
    auto loaded =
        load_or_throw(path_from_utf8(a.positional[0]),
                      format_flag(a, "--format", data::DatasetFormat::Auto), load_options(a));
    const Json manifest = data::dataset_manifest(loaded.dataset);
    if (auto it = a.values.find("--out"); it != a.values.end())
        write_file_atomically(path_from_utf8(it->second), data::manifest_text(manifest) + "\n");
    std::printf("%s\n", data::manifest_id(manifest).c_str());
    return 0;
}

const char* kSplitUsage =
    "usage: crucible dataset split SRC OUT [--val 0.2] [--seed 0] [--to yolo|coco|voc]\n\n"
    "Writes SRC to OUT with a new stratified train/val split (every class in val in proportion);\n"
    "the same seed gives the same split.\n";

int run_split(const std::vector<std::string>& words) {
    const auto a = parse_args(words, {"--val", "--seed", "--to", "--format"},
                              {"--allow-outside-root"}, kSplitUsage);
    if (a.help) {
        std::printf("%s", kSplitUsage);
        return 0;
    }
    if (a.positional.size() != 2)
        throw InputError("SRC OUT", std::string("expects two paths\n") + kSplitUsage);
    double fraction = 0.2;
    std::uint64_t seed = 0;
    try {
        if (a.values.count("--val")) fraction = std::stod(a.values.at("--val"));
        if (a.values.count("--seed")) seed = std::stoull(a.values.at("--seed"));
    } catch (const std::exception&) {
        throw InputError("--val/--seed", "expects a number");
    }
    const fs::path out = path_from_utf8(a.positional[1]);
    refuse_non_empty(out);
    auto loaded =
        load_or_throw(path_from_utf8(a.positional[0]),
                      format_flag(a, "--format", data::DatasetFormat::Auto), load_options(a));
    data::split_train_val(loaded.dataset, fraction, seed);
    const auto to = format_flag(a, "--to", data::DatasetFormat::Yolo);
    const auto main = data::save_detection_dataset(loaded.dataset, out, to);
    const auto stats = data::compute_stats(loaded.dataset);
    std::printf("train %zu, val %zu: %s\n",
                stats.images_per_split.count("train") ? stats.images_per_split.at("train") : 0,
                stats.images_per_split.count("val") ? stats.images_per_split.at("val") : 0,
                path_to_utf8(main).c_str());
    return 0;
}

const char* kDedupeUsage =
    "usage: crucible dataset dedupe PATH [--out OUT] [--to yolo|coco|voc]\n\n"
    "Lists images with identical bytes (SHA-256). --out writes the dataset without the repeats\n"
    "(the first of each group is kept).\n";

int run_dedupe(const std::vector<std::string>& words) {
    const auto a =
        parse_args(words, {"--out", "--to", "--format"}, {"--allow-outside-root"}, kDedupeUsage);
    if (a.help) {
        std::printf("%s", kDedupeUsage);
        return 0;
    }
    if (a.positional.size() != 1)
        throw InputError("PATH", std::string("expects one dataset path\n") + kDedupeUsage);
    auto loaded =
        load_or_throw(path_from_utf8(a.positional[0]),
                      format_flag(a, "--format", data::DatasetFormat::Auto), load_options(a));
    auto& ds = loaded.dataset;
    const auto groups = data::find_duplicate_images(ds);
    for (const auto& g : groups) {
        std::printf("%s\n", ds.images[g[0]].sha256.c_str());
        for (auto i : g)
            std::printf("  %s\n", path_to_utf8(ds.images[i].path).c_str());
    }
    std::printf("%zu groups of duplicate images\n", groups.size());
    if (auto it = a.values.find("--out"); it != a.values.end()) {
        const fs::path out = path_from_utf8(it->second);
        refuse_non_empty(out);
        const std::size_t removed = data::remove_duplicate_images(ds);
        const auto main = data::save_detection_dataset(
            ds, out, format_flag(a, "--to", data::DatasetFormat::Yolo));
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
