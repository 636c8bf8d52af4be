#include "core/data/formats/image_tags_file.h"

#include <map>
#include <string>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/formats/path_text.h"

namespace crucible::data {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxTagsFileBytes = 64u << 20;

}  // namespace

void read_image_tags_beside(const fs::path& yaml_path, DetectionDataset& dataset,
                            std::vector<DatasetProblem>& problems) {
    const fs::path folder = yaml_path.parent_path();
    const fs::path file = folder / kImageTagsFileName;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return;
    const std::string shown = kImageTagsFileName;
    Json json;
    try {
        json = parse_json(read_file_bytes_limited(file, kMaxTagsFileBytes), shown);
    } catch (const std::exception& e) {
        problems.push_back({shown, detail::safe_utf8(e.what())});
        return;
    }
    if (!json.is_object()) {
        problems.push_back({shown, "must be a JSON object of image path to tags, not " +
                                       std::string(json_type_name(json))});
        return;
    }
    std::map<fs::path, ImageRecord*> by_path;
    for (auto& record : dataset.images)
        by_path[detail::normalized_absolute(record.path)] = &record;
    const fs::path base = detail::normalized_absolute(folder);
    for (const auto& [key, tags] : json.items()) {
        const std::string where = shown + ": \"" + detail::safe_utf8(key) + "\"";
        const fs::path image = (base / path_from_utf8(key)).lexically_normal();
        if (key.empty() || path_from_utf8(key).is_absolute() ||
            !detail::lexically_inside(base, image)) {
            problems.push_back({where,
                                "must be a path inside the dataset's folder (path "
                                "traversal and absolute paths are refused)"});
            continue;
        }
        const auto it = by_path.find(image);
        if (it == by_path.end()) {
            problems.push_back(
                {where, "is not an image of this dataset; its tags are ignored", false});
            continue;
        }
        if (!tags.is_object()) {
            problems.push_back({where, "must map to an object of tags (\"station\": \"3\"), not " +
                                           std::string(json_type_name(tags))});
            continue;
        }
        std::map<std::string, std::string> read;
        bool good = true;
        for (const auto& [name, value] : tags.items())
            if (name.empty() || !value.is_string()) {
                problems.push_back({where + "." + detail::safe_utf8(name),
                                    "a tag needs a name and a text value, not " +
                                        std::string(json_type_name(value))});
                good = false;
            } else {
                read[name] = value.get<std::string>();
            }
        if (good) it->second->tags = std::move(read);
    }
}

void write_image_tags_beside(const fs::path& yaml_path, const DetectionDataset& dataset,
                             const std::vector<fs::path>& image_paths) {
    Json json = Json::object();
    const fs::path base = detail::normalized_absolute(yaml_path.parent_path());
    for (std::size_t i = 0; i < dataset.images.size() && i < image_paths.size(); ++i) {
        if (dataset.images[i].tags.empty()) continue;
        const fs::path relative =
            detail::normalized_absolute(image_paths[i]).lexically_relative(base);
        json[path_to_utf8(fs::path(relative.generic_u8string()))] = dataset.images[i].tags;
    }
    if (json.empty()) return;
    write_file_atomically(yaml_path.parent_path() / kImageTagsFileName, json.dump(1) + "\n");
}

}  // namespace crucible::data
