// COCO JSON: images[{id,file_name,width,height}], annotations[{id,image_id,category_id,
// bbox:[x,y,w,h] pixels,area,iscrowd}], categories[{id,name}]. Category ids need not be
// contiguous: sorted by id they become class indices 0..n-1. Crowd annotations are skipped (as
// detection training does). Crucible adds "split" and "tags" to images and "difficult" to
// annotations; other readers ignore them.
#include <algorithm>
#include <cmath>
#include <map>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/formats/format_util.h"
#include "core/data/formats/formats.h"

namespace crucible::data {
namespace fs = std::filesystem;
using detail::display_path;

namespace {

bool integer_of(const Json& v, long long& out) {
    if (v.is_number_integer()) {
        out = v.get<long long>();
        return true;
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15) {
            out = static_cast<long long>(d);
            return true;
        }
    }
    return false;
}

}  // namespace

LoadResult load_coco(const fs::path& json_path, const LoadOptions& options) {
    const fs::path json_abs = detail::normalized_absolute(json_path);
    const std::string where = detail::safe_utf8(path_to_utf8(json_abs.filename()));
    const Json doc =
        parse_json(read_file_bytes_limited(json_path, options.max_annotation_bytes), where);
    if (!doc.is_object()) throw InputError(where, "COCO file must be a JSON object");
    for (const char* field : {"images", "categories"})
        if (!doc.contains(field) || !doc[field].is_array())
            throw InputError(where, std::string("field '") + field + "' must be an array");
    if (doc.contains("annotations") && !doc["annotations"].is_array())
        throw InputError(where, "field 'annotations' must be an array");

    LoadResult result;
    const fs::path root = json_abs.parent_path();
    result.dataset.root = root;
    auto& problems = result.problems;

    std::map<long long, std::string> categories;
    for (std::size_t i = 0; i < doc["categories"].size(); ++i) {
        const Json& c = doc["categories"][i];
        const std::string at = where + ": categories[" + std::to_string(i) + "]";
        long long id;
        if (!c.is_object() || !c.contains("id") || !integer_of(c["id"], id))
            throw InputError(at, "needs an integer 'id'");
        if (!c.contains("name") || !c["name"].is_string())
            throw InputError(at, "needs a text 'name'");
        if (!categories.emplace(id, c["name"].get<std::string>()).second)
            throw InputError(at, "category id " + std::to_string(id) + " appears twice");
    }
    std::map<long long, int> class_of;
    for (const auto& [id, name] : categories) {
        class_of[id] = static_cast<int>(result.dataset.class_names.size());
        result.dataset.class_names.push_back(name);
    }

    struct Pending {
        ImageRecord record;
        bool bad = false;
        bool known = false;
        std::string shown;
    };
    std::vector<Pending> images;
    std::map<long long, std::size_t> index_of;
    const std::string stem = path_to_utf8(json_abs.stem());
    const std::string stem_dir = stem.rfind("instances_", 0) == 0 ? stem.substr(10) : stem;
    const std::vector<fs::path> dirs{
        root, root / "images", root.parent_path() / "images",
        root.parent_path() / path_from_utf8(detail::safe_utf8(stem_dir)), root.parent_path()};
    for (std::size_t i = 0; i < doc["images"].size(); ++i) {
        const Json& im = doc["images"][i];
        const std::string at = where + ": images[" + std::to_string(i) + "]";
        long long id;
        if (!im.is_object() || !im.contains("id") || !integer_of(im["id"], id)) {
            problems.push_back({at, "needs an integer 'id'"});
            continue;
        }
        if (!im.contains("file_name") || !im["file_name"].is_string()) {
            problems.push_back({at, "needs a text 'file_name'"});
            continue;
        }
        const std::string file_name = im["file_name"].get<std::string>();
        if (!is_valid_utf8(file_name) || file_name.empty()) {
            problems.push_back({at, "'file_name' is empty or not valid UTF-8"});
            continue;
        }
        const fs::path given = path_from_utf8(file_name);
        bool traversal = given.is_absolute() || given.has_root_name();
        for (const auto& part : given)
            if (part == "..") traversal = true;
        if (traversal && !options.allow_outside_root) {
            problems.push_back({at, "'file_name' '" + file_name +
                                        "' leaves the dataset folder (path traversal refused)"});
            continue;
        }
        Pending p;
        p.known = true;
        std::error_code ec;
        for (const auto& dir : dirs) {
            const fs::path candidate = given.is_absolute() ? given : dir / given;
            if (fs::exists(candidate, ec)) {
                p.record.path = candidate.lexically_normal();
                break;
            }
        }
        p.shown = file_name;
        if (p.record.path.empty()) {
            problems.push_back({at, "image '" + file_name + "' not found beside " + where +
                                        " or in an images/ folder"});
            continue;
        }
        if (im.contains("width") && im.contains("height")) {
            long long w = 0, h = 0;
            if (integer_of(im["width"], w) && integer_of(im["height"], h) && w > 0 && h > 0 &&
                w < (1 << 30) && h < (1 << 30)) {
                p.record.width = int(w);
                p.record.height = int(h);
            }
        }
        const int json_w = p.record.width, json_h = p.record.height;
        if (auto problem = detail::inspect_image(p.record, p.record.path, options);
            !problem.empty()) {
            problems.push_back({display_path(p.record.path, root), problem});
            continue;
        }
        if (json_w > 0 && (p.record.width != json_w || p.record.height != json_h)) {
            problems.push_back({at,
                                "width/height " + std::to_string(json_w) + "x" +
                                    std::to_string(json_h) +
                                    " differ from the image header; the JSON values are used",
                                false});
            p.record.width = json_w;
            p.record.height = json_h;
        }
        if (p.record.width <= 0) {
            try {
                const auto [w, h] = detail::image_size(result.dataset, p.record);
                p.record.width = w;
                p.record.height = h;
            } catch (const InputError&) {
                problems.push_back({at, "no width/height and the image size cannot be read"});
                continue;
            }
        }
        p.record.split = "train";
        if (im.contains("split") && im["split"].is_string())
            p.record.split = im["split"].get<std::string>();
        if (im.contains("tags") && im["tags"].is_object())
            for (const auto& [k, v] : im["tags"].items())
                if (v.is_string()) p.record.tags[k] = v.get<std::string>();
        if (!index_of.emplace(id, images.size()).second) {
            problems.push_back({at, "image id " + std::to_string(id) + " appears twice"});
            continue;
        }
        images.push_back(std::move(p));
    }

    std::size_t crowd = 0;
    const Json empty = Json::array();
    const Json& annotations = doc.contains("annotations") ? doc["annotations"] : empty;
    for (std::size_t i = 0; i < annotations.size(); ++i) {
        const Json& a = annotations[i];
        std::string at = where + ": annotations[" + std::to_string(i) + "]";
        long long image_id, category_id;
        if (!a.is_object() || !a.contains("image_id") || !integer_of(a["image_id"], image_id)) {
            problems.push_back({at, "needs an integer 'image_id'"});
            continue;
        }
        const auto image_it = index_of.find(image_id);
        if (image_it == index_of.end()) {
            problems.push_back(
                {at, "image_id " + std::to_string(image_id) + " names no usable image", false});
            continue;
        }
        Pending& p = images[image_it->second];
        auto bad = [&](const std::string& what) {
            problems.push_back({at, what});
            p.bad = true;
        };
        long long iscrowd = 0;
        if (a.contains("iscrowd") && integer_of(a["iscrowd"], iscrowd) && iscrowd != 0) {
            ++crowd;
            continue;
        }
        if (!a.contains("category_id") || !integer_of(a["category_id"], category_id)) {
            bad("needs an integer 'category_id'");
            continue;
        }
        const auto cls = class_of.find(category_id);
        if (cls == class_of.end()) {
            bad("category_id " + std::to_string(category_id) + " is not in 'categories'");
            continue;
        }
        if (!a.contains("bbox") || !a["bbox"].is_array() || a["bbox"].size() != 4) {
            bad("'bbox' must be [x, y, width, height]");
            continue;
        }
        double v[4];
        bool numbers = true;
        for (int k = 0; k < 4; ++k) {
            const Json& n = a["bbox"][k];
            numbers = numbers && n.is_number() && std::isfinite(v[k] = n.get<double>());
        }
        if (!numbers) {
            bad("'bbox' values must be finite numbers");
            continue;
        }
        const double W = p.record.width, H = p.record.height;
        if (v[2] < 0 || v[3] < 0) {
            bad("'bbox' has a negative width or height");
            continue;
        }
        if (v[0] < -1 || v[1] < -1 || v[0] + v[2] > W + 1 || v[1] + v[3] > H + 1) {
            bad("'bbox' lies outside the image (" + std::to_string(p.record.width) + "x" +
                std::to_string(p.record.height) + ")");
            continue;
        }
        const double x1 = std::max(0.0, v[0]), y1 = std::max(0.0, v[1]);
        const double x2 = std::min(W, v[0] + v[2]), y2 = std::min(H, v[1] + v[3]);
        if (x2 <= x1 || y2 <= y1) {
            bad("'bbox' has zero width or height");
            continue;
        }
        Box box;
        box.cls = cls->second;
        box.cx = (x1 + x2) / 2 / W;
        box.cy = (y1 + y2) / 2 / H;
        box.w = (x2 - x1) / W;
        box.h = (y2 - y1) / H;
        long long difficult = 0;
        box.difficult =
            a.contains("difficult") && integer_of(a["difficult"], difficult) && difficult != 0;
        p.record.boxes.push_back(box);
    }
    if (crowd > 0)
        problems.push_back(
            {where, std::to_string(crowd) + " crowd annotations (iscrowd=1) skipped", false});
    for (auto& p : images) {
        if (p.bad) {
            problems.push_back(
                {display_path(p.record.path, root), "image dropped: its annotations have errors"});
            continue;
        }
        result.dataset.images.push_back(std::move(p.record));
    }
    result.dropped_images = doc["images"].size() - result.dataset.images.size();
    return result;
}

fs::path save_coco(const DetectionDataset& dataset, const fs::path& out, ImageFiles files) {
    std::vector<fs::path> folders(dataset.images.size(), out / "images");
    const auto copied = detail::copy_images(dataset, folders, files);
    Json images = Json::array(), annotations = Json::array(), categories = Json::array();
    for (std::size_t c = 0; c < dataset.class_names.size(); ++c)
        categories.push_back(
            {{"id", c + 1}, {"name", dataset.class_names[c]}, {"supercategory", ""}});
    long long annotation_id = 1;
    for (std::size_t i = 0; i < copied.size(); ++i) {
        const auto& record = dataset.images[i];
        const auto [width, height] = detail::image_size(dataset, record);
        Json image = {{"id", i + 1},
                      {"file_name", path_to_utf8(copied[i].filename())},
                      {"width", width},
                      {"height", height},
                      {"split", detail::split_of(record)}};
        if (!record.tags.empty()) image["tags"] = record.tags;
        images.push_back(image);
        for (const auto& box : record.boxes) {
            if (box.cls < 0 || box.cls >= int(dataset.class_names.size()))
                throw Error("class id " + std::to_string(box.cls) +
                            " has no name; cannot write COCO");
            const double x = (box.cx - box.w / 2) * width, y = (box.cy - box.h / 2) * height;
            const double w = box.w * width, h = box.h * height;
            Json a = {{"id", annotation_id++}, {"image_id", i + 1}, {"category_id", box.cls + 1},
                      {"bbox", {x, y, w, h}},  {"area", w * h},     {"iscrowd", 0}};
            if (box.difficult) a["difficult"] = 1;
            annotations.push_back(a);
        }
    }
    const Json doc = {{"info", {{"description", "written by Crucible"}}},
                      {"images", images},
                      {"annotations", annotations},
                      {"categories", categories}};
    const fs::path path = out / "annotations.json";
    fs::create_directories(out);
    write_file_atomically(path, doc.dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
    return path;
}

}  // namespace crucible::data
