// Pascal VOC: one XML per image (<size>, <object><name/><difficult/><bndbox>), pixel
// coordinates 1-based as in the original VOC tools: continuous x = xmin - 1 .. xmax - 1.
// Layouts read: Annotations/ + JPEGImages/ (+ ImageSets/Main/<split>.txt), or a folder of .xml
// files with images beside them. classes.txt (one name a line) fixes the class order.
#include <algorithm>
#include <cmath>
#include <map>
#include <pugixml.hpp>
#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/format_util.h"
#include "core/data/formats/formats.h"
#include "core/data/formats/xml_reader.h"
#include "core/data/formats/yolo_labels.h"

namespace crucible::data {
namespace fs = std::filesystem;
using detail::display_path;

namespace {

std::vector<std::string> read_lines(const fs::path& path, std::uint64_t limit,
                                    std::vector<DatasetProblem>& problems, const fs::path& root) {
    std::vector<std::string> lines;
    const auto text = detail::read_text_file(path, limit, display_path(path, root), problems);
    if (!text) return lines;
    std::string_view rest(*text);
    if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);
    while (!rest.empty()) {
        const auto nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
            line.remove_suffix(1);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
            line.remove_prefix(1);
        if (!line.empty()) lines.emplace_back(line);
    }
    return lines;
}

struct ParsedXml {
    fs::path xml;
    XmlElement root;
};

}  // namespace

LoadResult load_voc(const fs::path& folder_in, const LoadOptions& options) {
    LoadResult result;
    fs::path folder = detail::normalized_absolute(folder_in);
    std::error_code ec;
    if (fs::is_regular_file(folder, ec)) folder = folder.parent_path();
    if (!fs::is_directory(folder, ec))
        throw InputError(path_to_utf8(folder_in), "VOC dataset folder does not exist");
    fs::path ann_dir = folder;
    std::vector<fs::path> image_dirs{folder};
    if (fs::is_directory(folder / "Annotations", ec)) {
        ann_dir = folder / "Annotations";
        image_dirs = {folder / "JPEGImages", folder / "images", ann_dir};
    } else {
        image_dirs.push_back(folder.parent_path() / "JPEGImages");
        image_dirs.push_back(folder.parent_path() / "images");
    }
    result.dataset.root = folder;
    auto& problems = result.problems;

    std::vector<fs::path> xmls;
    for (fs::directory_iterator it(ann_dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string ext = path_to_utf8(it->path().extension());
        std::transform(ext.begin(), ext.end(), ext.begin(),
                       [](unsigned char c) { return char(std::tolower(c)); });
        if (ext == ".xml") xmls.push_back(it->path());
    }
    std::sort(xmls.begin(), xmls.end());
    if (xmls.empty())
        throw InputError(path_to_utf8(folder_in), "no VOC .xml annotation files found");

    // Split of each image stem, from ImageSets/Main/<split>.txt when present.
    std::map<std::string, std::string> split_of_stem;
    for (const std::string split : {"train", "val", "test"}) {
        const fs::path list = folder / "ImageSets" / "Main" / (split + ".txt");
        if (fs::is_regular_file(list, ec))
            for (auto& line : read_lines(list, options.max_label_bytes, problems, folder))
                split_of_stem.emplace(line.substr(0, line.find_first_of(" \t")), split);
    }

    std::vector<ParsedXml> parsed;
    std::set<std::string> found_names;
    for (const auto& xml : xmls) {
        const std::string shown = display_path(xml, folder);
        if (!detail::has_utf8_name(xml)) {
            problems.push_back({shown, "file name is not valid UTF-8 (rename the file)"});
            continue;
        }
        const auto text = detail::read_text_file(xml, options.max_label_bytes, shown, problems);
        if (!text) continue;
        try {
            XmlElement root = parse_xml(*text, shown);
            if (root.name != "annotation")
                throw InputError(shown + ":" + std::to_string(root.line),
                                 "root element is <" + root.name + ">, expected <annotation>");
            for (const auto* object : root.children_named("object"))
                found_names.insert(object->child_text("name"));
            parsed.push_back({xml, std::move(root)});
        } catch (const InputError& e) {
            problems.push_back({e.where(), std::string(e.what()).substr(e.where().size() + 2)});
        }
    }
    found_names.erase("");
    // Class order: classes.txt first, then names found in the files (sorted).
    std::map<std::string, int> class_index;
    auto& names = result.dataset.class_names;
    for (const fs::path& classes : {folder / "classes.txt", ann_dir / "classes.txt"}) {
        if (!names.empty() || !fs::is_regular_file(classes, ec)) continue;
        for (auto& line : read_lines(classes, options.max_label_bytes, problems, folder))
            if (class_index.emplace(line, int(names.size())).second) names.push_back(line);
    }
    for (const auto& name : found_names)
        if (class_index.emplace(name, int(names.size())).second) names.push_back(name);

    for (const auto& [xml, root] : parsed) {
        const std::string shown = display_path(xml, folder);
        std::string filename = root.child_text("filename");
        std::vector<std::string> candidates;
        if (!filename.empty()) {
            const fs::path given = path_from_utf8(detail::safe_utf8(filename));
            if (given.is_absolute() || given.has_parent_path() ||
                filename.find("..") != std::string::npos) {
                if (!options.allow_outside_root) {
                    problems.push_back(
                        {shown + ":" + std::to_string(root.child("filename")->line),
                         "<filename> '" + detail::safe_utf8(filename) +
                             "' must be a plain file name (path traversal refused)"});
                    continue;
                }
            }
            candidates.push_back(filename);
        }
        const std::string stem = path_to_utf8(xml.stem());
        for (const char* ext : {".jpg", ".jpeg", ".png", ".bmp", ".JPG", ".PNG"})
            candidates.push_back(stem + ext);
        fs::path image;
        for (const auto& dir : image_dirs) {
            for (const auto& name : candidates) {
                const fs::path p = dir / path_from_utf8(detail::safe_utf8(name));
                if (fs::is_regular_file(p, ec)) {
                    image = p.lexically_normal();
                    break;
                }
            }
            if (!image.empty()) break;
        }
        if (image.empty()) {
            problems.push_back({shown, "image '" +
                                           detail::safe_utf8(filename.empty() ? stem : filename) +
                                           "' not found"});
            continue;
        }
        ImageRecord record;
        record.path = image;
        record.annotation_file = xml;
        const std::string image_stem = path_to_utf8(image.stem());
        auto split_it = split_of_stem.find(image_stem);
        if (split_it == split_of_stem.end()) split_it = split_of_stem.find(stem);
        record.split = split_it != split_of_stem.end() ? split_it->second : "train";
        if (auto problem = detail::inspect_image(record, image, options); !problem.empty()) {
            problems.push_back({display_path(image, folder), problem});
            continue;
        }
        const std::size_t before = problems.size();
        auto add = [&](int line, const std::string& what) {
            problems.push_back({shown + ":" + std::to_string(line), what});
        };
        double width = 0, height = 0;
        if (const auto* size = root.child("size")) {
            const std::string w = size->child_text("width"), h = size->child_text("height");
            if (!w.empty() && !parse_label_number(w, width))
                add(size->line, "<width> '" + w + "' is not a number");
            if (!h.empty() && !parse_label_number(h, height))
                add(size->line, "<height> '" + h + "' is not a number");
        }
        if (!(width > 0 && height > 0 && std::isfinite(width) && std::isfinite(height))) {
            if (record.width <= 0) {
                const auto header = read_image_header(image);
                if (header) {
                    record.width = header->width;
                    record.height = header->height;
                }
            }
            width = record.width;
            height = record.height;
            if (width <= 0 || height <= 0)
                add(root.line, "no usable <size> and the image size cannot be read");
        } else if (record.width > 0 &&
                   (int(width) != record.width || int(height) != record.height)) {
            problems.push_back({shown,
                                "<size> " + format_number(width) + "x" + format_number(height) +
                                    " differs from the image header " +
                                    std::to_string(record.width) + "x" +
                                    std::to_string(record.height) + "; <size> is used",
                                false});
        }
        if (width > 0 && height > 0) {
            record.width = int(width);
            record.height = int(height);
            for (const auto* object : root.children_named("object")) {
                const std::string name = object->child_text("name");
                if (name.empty()) {
                    add(object->line, "<object> without <name>");
                    continue;
                }
                const auto* bnd = object->child("bndbox");
                if (!bnd) {
                    add(object->line, "<object> '" + name + "' without <bndbox>");
                    continue;
                }
                double v[4];
                bool ok = true;
                const char* keys[4] = {"xmin", "ymin", "xmax", "ymax"};
                for (int k = 0; k < 4 && ok; ++k) {
                    const std::string t = bnd->child_text(keys[k]);
                    if (!parse_label_number(t, v[k]) || !std::isfinite(v[k])) {
                        add(bnd->line, std::string("<") + keys[k] + "> '" + detail::safe_utf8(t) +
                                           "' is not a number");
                        ok = false;
                    }
                }
                if (!ok) continue;
                double x1 = std::max(0.0, v[0] - 1), y1 = std::max(0.0, v[1] - 1);
                double x2 = std::min(width, v[2] - 1), y2 = std::min(height, v[3] - 1);
                if (v[0] - 1 < -1 || v[1] - 1 < -1 || v[2] - 1 > width + 1 ||
                    v[3] - 1 > height + 1) {
                    add(bnd->line, "box lies outside the image (" + format_number(width) + "x" +
                                       format_number(height) + ")");
                    continue;
                }
                if (x2 <= x1 || y2 <= y1) {
                    add(bnd->line, "box has xmax <= xmin or ymax <= ymin");
                    continue;
                }
                Box box;
                box.cls = class_index.at(name);
                box.cx = (x1 + x2) / 2 / width;
                box.cy = (y1 + y2) / 2 / height;
                box.w = (x2 - x1) / width;
                box.h = (y2 - y1) / height;
                const std::string difficult = object->child_text("difficult");
                box.difficult = difficult == "1" || difficult == "true";
                record.boxes.push_back(box);
            }
        }
        if (problems.size() > before) {
            bool error = false;
            for (std::size_t k = before; k < problems.size(); ++k)
                error = error || problems[k].error;
            if (error) {
                problems.push_back(
                    {display_path(image, folder), "image dropped: its annotation has errors"});
                continue;
            }
        }
        result.dataset.images.push_back(std::move(record));
    }
    result.dropped_images = xmls.size() - result.dataset.images.size();
    return result;
}

namespace {

// One <object> of a VOC file, 1-based pixel coordinates (the reader's convention).
std::string voc_object_xml(const Box& box, double width, double height,
                           const std::vector<std::string>& names) {
    if (box.cls < 0 || box.cls >= int(names.size()))
        throw Error("class id " + std::to_string(box.cls) + " has no name; cannot write VOC");
    const double x1 = (box.cx - box.w / 2) * width, x2 = (box.cx + box.w / 2) * width;
    const double y1 = (box.cy - box.h / 2) * height, y2 = (box.cy + box.h / 2) * height;
    return "  <object>\n    <name>" + xml_escape(names[box.cls]) +
           "</name>\n    <pose>Unspecified</pose>\n    <truncated>0</truncated>\n    "
           "<difficult>" +
           (box.difficult ? "1" : "0") + "</difficult>\n    <bndbox>\n      <xmin>" +
           format_number(x1 + 1) + "</xmin>\n      <ymin>" + format_number(y1 + 1) +
           "</ymin>\n      <xmax>" + format_number(x2 + 1) + "</xmax>\n      <ymax>" +
           format_number(y2 + 1) + "</ymax>\n    </bndbox>\n  </object>\n";
}

bool same_boxes(const std::vector<Box>& a, const std::vector<std::string>& names_a,
                const std::vector<Box>& b, const std::vector<std::string>& names_b) {
    if (a.size() != b.size()) return false;
    auto name = [](const std::vector<std::string>& names, int cls) {
        return cls >= 0 && cls < int(names.size()) ? names[cls] : std::string();
    };
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double eps = 1e-6;  // text round-trips of pixel coordinates
        if (name(names_a, a[i].cls) != name(names_b, b[i].cls) ||
            std::abs(a[i].cx - b[i].cx) > eps || std::abs(a[i].cy - b[i].cy) > eps ||
            std::abs(a[i].w - b[i].w) > eps || std::abs(a[i].h - b[i].h) > eps ||
            a[i].difficult != b[i].difficult)
            return false;
    }
    return true;
}

}  // namespace

std::size_t write_voc_annotation_files(const DetectionDataset& dataset, const fs::path& folder) {
    const LoadResult on_disk = load_detection_dataset(folder, DatasetFormat::Voc);
    std::map<fs::path, const ImageRecord*> by_image;
    for (const auto& record : on_disk.dataset.images)
        by_image[fs::weakly_canonical(detail::image_path(on_disk.dataset, record))] = &record;
    std::size_t written = 0;
    for (const auto& record : dataset.images) {
        const auto it = by_image.find(fs::weakly_canonical(detail::image_path(dataset, record)));
        if (it == by_image.end())
            throw InputError(path_to_utf8(detail::image_path(dataset, record)),
                             "has no readable VOC annotation file in " + path_to_utf8(folder) +
                                 " to write its boxes to");
        const ImageRecord& old = *it->second;
        if (same_boxes(old.boxes, on_disk.dataset.class_names, record.boxes, dataset.class_names))
            continue;
        // The file keeps everything but its <object>s, which are written anew.
        pugi::xml_document doc;
        if (!doc.load_file(old.annotation_file.c_str(),
                           pugi::parse_default | pugi::parse_comments | pugi::parse_declaration))
            throw InputError(path_to_utf8(old.annotation_file), "cannot be read back as XML");
        pugi::xml_node root = doc.child("annotation");
        while (pugi::xml_node object = root.child("object"))
            root.remove_child(object);
        std::string objects;
        for (const auto& box : record.boxes)
            objects += voc_object_xml(box, old.width, old.height, dataset.class_names);
        if (!objects.empty() && !root.append_buffer(objects.data(), objects.size()))
            throw Error(path_to_utf8(old.annotation_file) + ": cannot add the boxes");
        std::ostringstream text;
        doc.save(text, "  ");
        write_file_atomically(old.annotation_file, text.str());
        ++written;
    }
    // A classes.txt fixes the class order when the files are read: it gets the names too.
    std::string classes;
    for (const auto& name : dataset.class_names)
        classes += name + "\n";
    std::error_code ec;
    for (const fs::path& list : {folder / "classes.txt", folder / "Annotations" / "classes.txt"})
        if (fs::is_regular_file(list, ec) && read_file_bytes(list) != classes) {
            write_file_atomically(list, classes);
            ++written;
        }
    return written;
}

fs::path save_voc(const DetectionDataset& dataset, const fs::path& out, ImageFiles files) {
    std::vector<fs::path> folders(dataset.images.size(), out / "JPEGImages");
    const auto copied = detail::copy_images(dataset, folders, files);
    std::map<std::string, std::string> lists;
    for (std::size_t i = 0; i < copied.size(); ++i) {
        const auto& record = dataset.images[i];
        const auto [width, height] = detail::image_size(dataset, record);
        const std::string stem = path_to_utf8(copied[i].stem());
        lists[detail::split_of(record)] += stem + "\n";
        std::string x = "<annotation>\n  <folder>JPEGImages</folder>\n  <filename>" +
                        xml_escape(path_to_utf8(copied[i].filename())) +
                        "</filename>\n  <size>\n    <width>" + std::to_string(width) +
                        "</width>\n    <height>" + std::to_string(height) +
                        "</height>\n    <depth>3</depth>\n  </size>\n  <segmented>0</segmented>\n";
        for (const auto& box : record.boxes)
            x += voc_object_xml(box, width, height, dataset.class_names);
        x += "</annotation>\n";
        detail::write_text_file(out / "Annotations" / path_from_utf8(stem + ".xml"), x);
    }
    for (const auto& [split, text] : lists)
        detail::write_text_file(out / "ImageSets" / "Main" / path_from_utf8(split + ".txt"), text);
    std::string classes;
    for (const auto& name : dataset.class_names)
        classes += name + "\n";
    detail::write_text_file(out / "classes.txt", classes);
    fs::create_directories(out / "Annotations");
    return out;
}

}  // namespace crucible::data
