#include "core/data/validate.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/format_util.h"

namespace crucible::data {

DatasetStats compute_stats(const DetectionDataset& dataset) {
    DatasetStats s;
    s.instances_per_class.assign(dataset.class_names.size(), 0);
    s.images_per_class.assign(dataset.class_names.size(), 0);
    for (const auto& im : dataset.images) {
        ++s.images;
        ++s.images_per_split[detail::split_of(im)];
        if (im.boxes.empty()) ++s.background_images;
        std::set<int> classes;
        for (const auto& b : im.boxes) {
            ++s.instances;
            if (b.cls >= 0 && b.cls < int(s.instances_per_class.size())) {
                ++s.instances_per_class[b.cls];
                classes.insert(b.cls);
            }
            const double area = b.w * b.h;
            std::size_t bin = 0;
            while (bin < kBoxAreaBins - 1 && area >= kBoxAreaEdges[bin])
                ++bin;
            ++s.box_area_histogram[bin];
        }
        for (int c : classes)
            ++s.images_per_class[c];
    }
    return s;
}

std::size_t ValidationReport::errors() const {
    return std::count_if(problems.begin(), problems.end(),
                         [](const DatasetProblem& p) { return p.error; });
}

std::size_t ValidationReport::warnings() const {
    return problems.size() - errors();
}

Json ValidationReport::to_json() const {
    Json classes = Json::array();
    for (std::size_t c = 0; c < class_names.size(); ++c)
        classes.push_back(
            {{"id", c},
             {"name", class_names[c]},
             {"instances", c < stats.instances_per_class.size() ? stats.instances_per_class[c] : 0},
             {"images", c < stats.images_per_class.size() ? stats.images_per_class[c] : 0}});
    Json bins = Json::array();
    for (std::size_t b = 0; b < kBoxAreaBins; ++b)
        bins.push_back({{"min_area", b == 0 ? 0.0 : kBoxAreaEdges[b - 1]},
                        {"max_area", b + 1 < kBoxAreaBins ? kBoxAreaEdges[b] : 1.0},
                        {"boxes", stats.box_area_histogram[b]}});
    Json problem_list = Json::array();
    for (const auto& p : problems)
        problem_list.push_back(
            {{"where", p.where}, {"what", p.what}, {"severity", p.error ? "error" : "warning"}});
    return {{"path", path},
            {"format", format},
            {"ok", ok()},
            {"errors", errors()},
            {"warnings", warnings()},
            {"images", stats.images},
            {"background_images", stats.background_images},
            {"dropped_images", stats.dropped_images},
            {"instances", stats.instances},
            {"images_per_split", stats.images_per_split},
            {"classes", classes},
            {"box_area_histogram", bins},
            {"problems", problem_list}};
}

std::string ValidationReport::to_text(std::size_t max_problems) const {
    std::string out;
    char line[512];
    std::size_t shown = 0;
    for (const auto& p : problems) {
        if (shown++ == max_problems) {
            out += "... " + std::to_string(problems.size() - max_problems) +
                   " more problems (use --json for all)\n";
            break;
        }
        out += p.where + ": " + (p.error ? "error: " : "warning: ") + p.what + "\n";
    }
    if (!problems.empty()) out += "\n";
    out += "dataset " + path + (format.empty() ? "" : " (" + format + ")") + "\n";
    std::snprintf(line, sizeof line, "  images: %zu usable (%zu background), %zu dropped\n",
                  stats.images, stats.background_images, stats.dropped_images);
    out += line;
    for (const auto& [split, n] : stats.images_per_split) {
        std::snprintf(line, sizeof line, "    %-6s %zu\n", split.c_str(), n);
        out += line;
    }
    std::snprintf(line, sizeof line, "  instances: %zu in %zu classes\n", stats.instances,
                  class_names.size());
    out += line;
    for (std::size_t c = 0; c < class_names.size(); ++c) {
        std::snprintf(line, sizeof line, "    %3zu %-24s %8zu boxes in %zu images\n", c,
                      class_names[c].c_str(), stats.instances_per_class[c],
                      stats.images_per_class[c]);
        out += line;
    }
    out += "  box area (fraction of the image):\n";
    const std::size_t most = std::max<std::size_t>(
        1, *std::max_element(stats.box_area_histogram.begin(), stats.box_area_histogram.end()));
    for (std::size_t b = 0; b < kBoxAreaBins; ++b) {
        const double lo = b == 0 ? 0.0 : kBoxAreaEdges[b - 1],
                     hi = b + 1 < kBoxAreaBins ? kBoxAreaEdges[b] : 1.0;
        const std::size_t n = stats.box_area_histogram[b];
        std::snprintf(
            line, sizeof line, "    %-7g - %-7g %8zu %s\n", lo, hi, n,
            std::string(n == 0 ? 0 : std::max<std::size_t>(1, n * 40 / most), '#').c_str());
        out += line;
    }
    out += std::to_string(errors()) + " errors, " + std::to_string(warnings()) + " warnings\n";
    return out;
}

ValidationReport validate_dataset(const std::filesystem::path& path, DatasetFormat format,
                                  LoadOptions options) {
    options.check_images = true;
    ValidationReport report;
    report.path = detail::safe_utf8(path_to_utf8(path));
    try {
        if (format == DatasetFormat::Auto) format = detect_dataset_format(path);
        report.format = dataset_format_name(format);
        LoadResult loaded = load_detection_dataset(path, format, options);
        report.class_names = loaded.dataset.class_names;
        report.stats = compute_stats(loaded.dataset);
        report.stats.dropped_images = loaded.dropped_images;
        report.problems = std::move(loaded.problems);
    } catch (const InputError& e) {
        std::string what = e.what();
        if (!e.where().empty() && what.rfind(e.where() + ": ", 0) == 0)
            what.erase(0, e.where().size() + 2);
        report.problems.push_back({e.where().empty() ? report.path : e.where(), what, true});
    } catch (const std::filesystem::filesystem_error& e) {
        report.problems.push_back({report.path, e.what(), true});
    }
    return report;
}

}  // namespace crucible::data
