#include "core/data/dataset_io.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/format_util.h"
#include "core/data/formats/formats.h"

namespace crucible::data {
namespace fs = std::filesystem;

DatasetFormat parse_dataset_format(const std::string& text) {
    std::string t = text;
    std::transform(t.begin(), t.end(), t.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (t == "auto") return DatasetFormat::Auto;
    if (t == "yolo" || t == "ultralytics") return DatasetFormat::Yolo;
    if (t == "coco") return DatasetFormat::Coco;
    if (t == "voc" || t == "pascal-voc") return DatasetFormat::Voc;
    throw InputError("format", "unknown dataset format '" + detail::safe_utf8(text) +
                                   "' (auto, yolo, coco, voc)");
}

const char* dataset_format_name(DatasetFormat format) {
    switch (format) {
        case DatasetFormat::Auto:
            return "auto";
        case DatasetFormat::Yolo:
            return "yolo";
        case DatasetFormat::Coco:
            return "coco";
        case DatasetFormat::Voc:
            return "voc";
    }
    return "?";
}

namespace {

std::string lower_ext(const fs::path& p) {
    std::string e = path_to_utf8(p.extension());
    std::transform(e.begin(), e.end(), e.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return e;
}

// The file inside a folder that holds the dataset of `format` (Auto: any), or empty.
fs::path find_main_file(const fs::path& folder, DatasetFormat format, DatasetFormat* found) {
    std::error_code ec;
    std::vector<fs::path> yamls, jsons;
    bool xml = false;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const auto e = lower_ext(it->path());
        if (e == ".yaml" || e == ".yml") yamls.push_back(it->path());
        if (e == ".json") jsons.push_back(it->path());
        if (e == ".xml") xml = true;
    }
    std::sort(yamls.begin(), yamls.end());
    std::sort(jsons.begin(), jsons.end());
    if (format == DatasetFormat::Auto || format == DatasetFormat::Yolo) {
        if (fs::is_regular_file(folder / "data.yaml", ec)) {
            *found = DatasetFormat::Yolo;
            return folder / "data.yaml";
        }
        if (yamls.size() == 1) {
            *found = DatasetFormat::Yolo;
            return yamls.front();
        }
    }
    if (format == DatasetFormat::Auto || format == DatasetFormat::Voc) {
        if (xml || fs::is_directory(folder / "Annotations", ec)) {
            *found = DatasetFormat::Voc;
            return folder;
        }
    }
    if (format == DatasetFormat::Auto || format == DatasetFormat::Coco) {
        if (fs::is_regular_file(folder / "annotations.json", ec)) {
            *found = DatasetFormat::Coco;
            return folder / "annotations.json";
        }
        if (jsons.size() == 1) {
            *found = DatasetFormat::Coco;
            return jsons.front();
        }
    }
    return {};
}

fs::path resolve(const fs::path& path, DatasetFormat& format) {
    std::error_code ec;
    const std::string where = detail::safe_utf8(path_to_utf8(path));
    if (!fs::exists(path, ec)) throw InputError(where, "dataset path does not exist");
    if (fs::is_directory(path, ec)) {
        DatasetFormat found = DatasetFormat::Auto;
        const fs::path main = find_main_file(path, format, &found);
        if (main.empty())
            throw InputError(
                where,
                format == DatasetFormat::Auto
                    ? "no dataset found here (a data.yaml, a COCO .json or VOC .xml files)"
                    : std::string("no ") + dataset_format_name(format) + " dataset found here");
        format = found;
        return main;
    }
    if (format == DatasetFormat::Auto) {
        const auto e = lower_ext(path);
        if (e == ".yaml" || e == ".yml")
            format = DatasetFormat::Yolo;
        else if (e == ".json")
            format = DatasetFormat::Coco;
        else if (e == ".xml")
            format = DatasetFormat::Voc;
        else
            throw InputError(
                where,
                "cannot tell the dataset format from this file (use a .yaml, .json or folder)");
    }
    if (format == DatasetFormat::Voc) return path.parent_path();
    return path;
}

}  // namespace

DatasetFormat detect_dataset_format(const fs::path& path) {
    DatasetFormat format = DatasetFormat::Auto;
    resolve(path, format);
    return format;
}

LoadResult load_detection_dataset(const fs::path& path, DatasetFormat format) {
    return load_detection_dataset(path, format, LoadOptions{});
}

LoadResult load_detection_dataset(const fs::path& path, DatasetFormat format,
                                  const LoadOptions& options) {
    const fs::path main = resolve(path, format);
    switch (format) {
        case DatasetFormat::Yolo:
            return load_yolo(main, options);
        case DatasetFormat::Coco:
            return load_coco(main, options);
        case DatasetFormat::Voc:
            return load_voc(main, options);
        case DatasetFormat::Auto:
            break;
    }
    throw Error("dataset format not resolved");
}

fs::path save_detection_dataset(const DetectionDataset& dataset, const fs::path& out,
                                DatasetFormat format, ImageFiles files) {
    switch (format) {
        case DatasetFormat::Yolo:
            return save_yolo(dataset, out, files);
        case DatasetFormat::Coco:
            return save_coco(dataset, out, files);
        case DatasetFormat::Voc:
            return save_voc(dataset, out, files);
        case DatasetFormat::Auto:
            break;
    }
    throw InputError("format", "choose an output format: yolo, coco or voc");
}

std::vector<std::string> load_problem_lines(const LoadResult& loaded, const std::string& source,
                                            int limit) {
    std::vector<std::string> lines;
    int errors = 0;
    for (const auto& p : loaded.problems)
        if (p.error && ++errors <= limit) lines.push_back(p.where + ": " + p.what);
    if (errors > 0)
        lines.push_back(
            std::to_string(errors) + " dataset problems; " + std::to_string(loaded.dropped_images) +
            " images left out (`crucible dataset validate " + source + "` lists them all)");
    return lines;
}

}  // namespace crucible::data
