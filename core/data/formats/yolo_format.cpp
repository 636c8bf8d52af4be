// Ultralytics YOLO layout: data.yaml + images/<split>/... + labels/<split>/<stem>.txt.
#include <yaml-cpp/yaml.h>

#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/data_yaml.h"
#include "core/data/formats/format_util.h"
#include "core/data/formats/formats.h"
#include "core/data/formats/image_tags_file.h"
#include "core/data/formats/yolo_labels.h"

namespace crucible::data {
namespace fs = std::filesystem;
using detail::display_path;

fs::path yolo_label_path(const fs::path& image) {
    std::u8string g = image.generic_u8string();
    const std::u8string from = u8"/images/", to = u8"/labels/";
    if (const auto at = g.rfind(from); at != std::u8string::npos) g.replace(at, from.size(), to);
    fs::path label(g);
    label.replace_extension(".txt");
    return label.make_preferred();
}

namespace {

struct YoloLoader {
    const LoadOptions& options;
    LoadResult result;
    std::set<fs::path> seen;
    std::size_t candidates = 0;

    void add_image(const fs::path& image, const std::string& split, bool must_exist) {
        const fs::path& root = result.dataset.root;
        const std::string shown = display_path(image, root);
        auto& problems = result.problems;
        if (!detail::has_utf8_name(image)) {
            problems.push_back({shown, "file name is not valid UTF-8 (rename the file)"});
            ++candidates;
            return;
        }
        if (!seen.insert(image).second) {
            problems.push_back(
                {shown, "image is listed more than once; only its first split is kept", false});
            return;
        }
        ++candidates;
        std::error_code ec;
        if (must_exist && !fs::exists(image, ec)) {
            problems.push_back({shown, "image file is missing"});
            return;
        }
        if (fs::is_directory(image, ec)) {
            problems.push_back({shown, "is a directory, not an image file"});
            return;
        }
        ImageRecord record;
        record.path = image;
        record.split = split;
        // The image and its labels are both checked, so that validation lists every problem.
        const std::string image_problem = detail::inspect_image(record, image, options);
        if (!image_problem.empty()) problems.push_back({shown, image_problem});
        const fs::path label = yolo_label_path(image);
        const std::string label_shown = display_path(label, root);
        if (fs::exists(label, ec) || fs::is_symlink(label, ec)) {
            std::vector<DatasetProblem> read_problems;
            const auto text =
                detail::read_text_file(label, options.max_label_bytes, label_shown, read_problems);
            if (!text) {
                problems.insert(problems.end(), read_problems.begin(), read_problems.end());
                problems.push_back({shown, "image dropped: its label file cannot be used"});
                return;
            }
            auto parsed = parse_yolo_labels(*text, label_shown,
                                            static_cast<int>(result.dataset.class_names.size()));
            problems.insert(problems.end(), parsed.problems.begin(), parsed.problems.end());
            if (parsed.has_error()) {
                problems.push_back({shown, "image dropped: its label file has errors"});
                return;
            }
            record.boxes = std::move(parsed.boxes);
        }
        if (!image_problem.empty()) return;
        result.dataset.images.push_back(std::move(record));
    }

    void add_list_file(const fs::path& list, const std::string& split) {
        const fs::path& root = result.dataset.root;
        const std::string list_shown = display_path(list, root);
        const auto text = detail::read_text_file(list, 256ull << 20, list_shown, result.problems);
        if (!text) return;
        std::string_view rest(*text);
        if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);
        std::size_t line_number = 0;
        while (!rest.empty()) {
            const auto nl = rest.find('\n');
            std::string_view line = rest.substr(0, nl);
            rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
            ++line_number;
            while (!line.empty() &&
                   (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
                line.remove_suffix(1);
            while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
                line.remove_prefix(1);
            if (line.empty()) continue;
            const std::string where = list_shown + ":" + std::to_string(line_number);
            ++candidates;
            if (!is_valid_utf8(line)) {
                result.problems.push_back({where, "image path is not valid UTF-8"});
                continue;
            }
            const fs::path given = path_from_utf8(line);
            const fs::path image =
                (given.is_absolute() ? given : list.parent_path() / given).lexically_normal();
            if (!options.allow_outside_root && !detail::lexically_inside(root, image)) {
                result.problems.push_back(
                    {where, "image path '" + std::string(line) +
                                "' points outside the dataset root (path traversal refused)"});
                continue;
            }
            --candidates;  // add_image counts it
            add_image(image, split, true);
        }
    }
};

}  // namespace

LoadResult load_yolo(const fs::path& yaml_path, const LoadOptions& options) {
    const std::string text = read_file_bytes_limited(yaml_path, 1u << 20);
    DataYaml spec = parse_data_yaml(text, yaml_path, options.allow_outside_root);
    YoloLoader loader{options, {}, {}};
    loader.result.dataset.root = spec.root;
    loader.result.dataset.class_names = spec.names;
    loader.result.problems = spec.problems;
    const std::string yaml_shown = detail::safe_utf8(path_to_utf8(yaml_path.filename()));
    for (const std::string split : {"train", "val", "test"}) {
        auto it = spec.splits.find(split);
        if (it == spec.splits.end()) continue;
        for (const auto& source : it->second) {
            std::error_code ec;
            const std::string shown = display_path(source, spec.root);
            if (fs::is_directory(source, ec)) {
                const auto images = detail::list_images(source);
                if (images.empty())
                    loader.result.problems.push_back(
                        {shown, "split '" + split + "': folder holds no images"});
                for (const auto& image : images)
                    loader.add_image(image, split, false);
            } else if (fs::is_regular_file(source, ec) && source.extension() == ".txt") {
                loader.add_list_file(source, split);
            } else if (fs::is_regular_file(source, ec) && detail::is_image_file_name(source)) {
                loader.add_image(source, split, true);
            } else {
                loader.result.problems.push_back(
                    {yaml_shown, "split '" + split + "': " + shown +
                                     " does not exist (or is not a folder, .txt list or image)"});
            }
        }
    }
    loader.result.dropped_images = loader.candidates - loader.result.dataset.images.size();
    read_image_tags_beside(yaml_path, loader.result.dataset, loader.result.problems);
    return std::move(loader.result);
}

fs::path save_yolo(const DetectionDataset& dataset, const fs::path& out, ImageFiles files) {
    std::vector<fs::path> folders;
    std::set<std::string> splits{"train"};
    for (const auto& record : dataset.images) {
        const std::string split = detail::split_of(record);
        if (split != "train" && split != "val" && split != "test")
            throw Error("cannot write split '" + split + "' to data.yaml (only train, val, test)");
        splits.insert(split);
        folders.push_back(out / "images" / path_from_utf8(split));
    }
    fs::create_directories(out / "images" / "train");
    const auto copied = detail::copy_images(dataset, folders, files);
    for (std::size_t i = 0; i < copied.size(); ++i) {
        std::string text;
        for (const auto& box : dataset.images[i].boxes)
            text += format_yolo_row(box) + "\n";
        detail::write_text_file(yolo_label_path(copied[i]), text);
    }
    YAML::Emitter yaml;
    yaml << YAML::BeginMap << YAML::Key << "path" << YAML::Value << ".";
    for (const std::string split : {"train", "val", "test"}) {
        if (!splits.count(split) && split != "val") continue;
        // Ultralytics wants a val entry; without val images it points at train.
        const std::string folder = splits.count(split) ? split : "train";
        yaml << YAML::Key << split << YAML::Value << "images/" + folder;
    }
    yaml << YAML::Key << "nc" << YAML::Value << dataset.class_names.size();
    yaml << YAML::Key << "names" << YAML::Value << YAML::BeginMap;
    for (std::size_t i = 0; i < dataset.class_names.size(); ++i)
        yaml << YAML::Key << i << YAML::Value << YAML::DoubleQuoted << dataset.class_names[i];
    yaml << YAML::EndMap << YAML::EndMap;
    const fs::path yaml_path = out / "data.yaml";
    fs::create_directories(out);
    write_image_tags_beside(yaml_path, dataset, copied);
    write_file_atomically(yaml_path, std::string(yaml.c_str()) + "\n");
    return yaml_path;
}

fs::path find_yolo_yaml(const fs::path& root) {
    std::error_code ec;
    if (fs::is_regular_file(root / "data.yaml", ec)) return root / "data.yaml";
    fs::path found;
    int yamls = 0;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        const auto ext = it->path().extension();
        if (it->is_regular_file(ec) && (ext == ".yaml" || ext == ".yml")) {
            found = it->path();
            ++yamls;
        }
    }
    return yamls == 1 ? found : fs::path();
}

bool write_yolo_class_names(const fs::path& yaml, const std::vector<std::string>& names) {
    const std::string text = read_file_bytes(yaml);
    if (parse_data_yaml(text, yaml, /*allow_outside_root=*/true).names == names) return false;
    YAML::Node doc = YAML::Load(text);  // parse_data_yaml checked it is a data.yaml map
    YAML::Node map(YAML::NodeType::Map);
    for (std::size_t i = 0; i < names.size(); ++i)
        map[i] = names[i];
    doc["names"] = map;
    if (doc["nc"]) doc["nc"] = names.size();
    YAML::Emitter out;
    out << doc;
    write_file_atomically(yaml, std::string(out.c_str()) + "\n");
    return true;
}

std::size_t write_yolo_label_files(const DetectionDataset& dataset) {
    std::size_t written = 0;
    for (const auto& record : dataset.images) {
        std::string text;
        for (const auto& box : record.boxes)
            text += format_yolo_row(box) + "\n";
        const fs::path label = yolo_label_path(detail::image_path(dataset, record));
        std::error_code ec;
        if (fs::exists(label, ec)) {  // the same boxes, however they were written: left alone
            const LabelParse old = parse_yolo_labels(read_file_bytes(label), "", 0);
            if (!old.has_error() && old.boxes == record.boxes) continue;
        }
        fs::create_directories(label.parent_path());
        write_file_atomically(label, text);
        ++written;
    }
    return written;
}

}  // namespace crucible::data
