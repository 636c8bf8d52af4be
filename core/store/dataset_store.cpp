#include "core/store/dataset_store.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/data/dataset_io.h"

namespace crucible::store {

namespace fs = std::filesystem;

namespace {

std::string tags_to_json(const std::map<std::string, std::string>& tags) {
    Json j = Json::object();
    for (const auto& [k, v] : tags)
        j[k] = v;
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::map<std::string, std::string> tags_from_json(std::string_view text, const std::string& where) {
    std::map<std::string, std::string> tags;
    Json j = parse_json(text, where);
    if (!j.is_object()) return tags;
    for (auto it = j.begin(); it != j.end(); ++it)
        tags[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    return tags;
}

void check_canceled(const ImportOptions& options) {
    if (options.cancel && options.cancel->load()) throw ImportCanceled();
}

std::string box_line(const data::Box& b) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%d %.6f %.6f %.6f %.6f%s", b.cls, b.cx, b.cy, b.w, b.h,
                  b.difficult ? " difficult" : "");
    return buf;
}

DatasetInfo read_info(Statement& s) {
    DatasetInfo d;
    d.id = s.column_int64(0);
    d.name = s.column_text(1);
    d.kind = s.column_text(2);
    d.source = s.column_text(3);
    d.format = s.column_text(4);
    d.version_hash = s.column_text(5);
    d.created_at = s.column_double(6);
    d.images = s.column_int64(7);
    d.boxes = s.column_int64(8);
    d.classes = s.column_int64(9);
    d.chat_records = s.column_int64(10);
    d.bytes = static_cast<std::uint64_t>(s.column_int64(11));
    return d;
}

constexpr const char* kInfoSelect = R"sql(
SELECT d.id, d.name, d.kind, d.source, d.format, d.version_hash, d.created_at,
       (SELECT count(*) FROM images i WHERE i.dataset_id = d.id),
       (SELECT count(*) FROM boxes b JOIN images i ON b.image_id = i.id WHERE i.dataset_id = d.id),
       (SELECT count(*) FROM classes c WHERE c.dataset_id = d.id),
       (SELECT count(*) FROM chat_records r WHERE r.dataset_id = d.id),
       (SELECT coalesce(sum(size), 0) FROM images i WHERE i.dataset_id = d.id)
FROM datasets d )sql";

void check_new_name(Project& project, const std::string& name) {
    if (name.empty()) throw InputError("name", "a dataset needs a name");
    if (!is_valid_utf8(name)) throw InputError("name", "dataset name is not valid UTF-8");
    if (find_dataset(project, name))
        throw InputError(name, "a dataset with this name already exists in the project");
}

}  // namespace

std::string dataset_version_hash(const std::vector<std::string>& class_names,
                                 const std::vector<data::ImageRecord>& images) {
    std::vector<std::string> lines;
    lines.reserve(images.size());
    for (const auto& img : images) {
        std::string line = img.sha256;
        line += '\t';
        line += img.split;
        for (const auto& b : img.boxes) {
            line += '\t';
            line += box_line(b);
        }
        lines.push_back(std::move(line));
    }
    std::sort(lines.begin(), lines.end());
    Sha256 h;
    h.update(std::string_view("crucible-dataset-v1\n"));
    for (std::size_t i = 0; i < class_names.size(); ++i) {
        h.update(std::string_view("class\t"));
        h.update(std::to_string(i));
        h.update(std::string_view("\t"));
        h.update(class_names[i]);
        h.update(std::string_view("\n"));
    }
    for (const auto& l : lines) {
        h.update(std::string_view("image\t"));
        h.update(l);
        h.update(std::string_view("\n"));
    }
    return h.hex_digest();
}

ImportResult import_dataset(Project& project, const data::DetectionDataset& dataset,
                            const ImportOptions& options) {
    project.require_writable("import a dataset");
    check_new_name(project, options.name);
    for (const auto& c : dataset.class_names)
        if (!is_valid_utf8(c)) throw InputError("class names", "a class name is not valid UTF-8");
    const int class_count = static_cast<int>(dataset.class_names.size());

    // Phase 1, outside any transaction: read and hash every image, check boxes.
    struct Row {
        std::string stored;
        std::uint64_t size = 0;
    };
    std::vector<Row> rows(dataset.images.size());
    std::vector<data::ImageRecord> hashed = dataset.images;
    std::set<std::string> seen;
    ImportProgress progress{"hash", 0, dataset.images.size(), 0};
    for (std::size_t i = 0; i < hashed.size(); ++i) {
        check_canceled(options);
        data::ImageRecord& img = hashed[i];
        fs::path file = img.path.is_absolute() ? img.path : dataset.root / img.path;
        const std::string where = path_to_utf8(file);
        std::error_code ec;
        auto size = fs::file_size(file, ec);
        if (ec) throw InputError(where, "cannot read image: " + ec.message());
        std::string sha = sha256_file(file);
        if (!img.sha256.empty() && img.sha256 != sha)
            throw InputError(where, "content does not match its recorded SHA-256");
        img.sha256 = sha;
        for (const auto& b : img.boxes) {
            std::string problem = data::box_problem(b, class_count);
            if (!problem.empty()) throw InputError(where, "box " + box_line(b) + ": " + problem);
        }
        rows[i].stored = project.to_stored_path(file);
        rows[i].size = size;
        if (!seen.insert(rows[i].stored).second)
            throw InputError(where, "is listed twice in the dataset");
        progress.done = i + 1;
        progress.bytes += size;
        if (options.progress) options.progress(progress);
    }
    ImportResult result;
    result.images = hashed.size();
    result.bytes = progress.bytes;
    result.version_hash = dataset_version_hash(dataset.class_names, hashed);

    // Phase 2: every row in one transaction.
    Database& db = project.db();
    Transaction tx(db);
    std::string source =
        dataset.root.empty() ? std::string() : project.to_stored_path(dataset.root);
    db.prepare(
          "INSERT INTO datasets(name, kind, source, format, version_hash, created_at) "
          "VALUES(?, 'detection', ?, ?, ?, ?)")
        .bind_all(options.name, source, options.format, result.version_hash, unix_time_now())
        .run();
    result.dataset_id = db.last_insert_rowid();
    auto add_class = db.prepare("INSERT INTO classes(dataset_id, idx, name) VALUES(?, ?, ?)");
    for (int i = 0; i < class_count; ++i)
        add_class.bind_all(result.dataset_id, i, dataset.class_names[static_cast<std::size_t>(i)])
            .run();
    auto add_image = db.prepare(
        "INSERT INTO images(dataset_id, path, size, sha256, width, height, split, tags) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    auto add_box = db.prepare(
        "INSERT INTO boxes(image_id, cls, cx, cy, w, h, difficult) VALUES(?, ?, ?, ?, ?, ?, ?)");
    progress = ImportProgress{"store", 0, hashed.size(), progress.bytes};
    for (std::size_t i = 0; i < hashed.size(); ++i) {
        const auto& img = hashed[i];
        add_image
            .bind_all(result.dataset_id, rows[i].stored, static_cast<std::int64_t>(rows[i].size),
                      img.sha256, img.width, img.height, img.split, tags_to_json(img.tags))
            .run();
        std::int64_t image_id = db.last_insert_rowid();
        for (const auto& b : img.boxes) {
            add_box.bind_all(image_id, b.cls, b.cx, b.cy, b.w, b.h, b.difficult ? 1 : 0).run();
            ++result.boxes;
        }
        if ((i + 1) % 256 == 0 || i + 1 == hashed.size()) {
            check_canceled(options);
            progress.done = i + 1;
            if (options.progress) options.progress(progress);
        }
    }
    tx.commit();
    return result;
}

ImportResult import_dataset_from(Project& project, const fs::path& source,
                                 const std::string& format, const ImportOptions& options,
                                 std::vector<std::string>* problems,
                                 const data::LoadOptions& load_options) {
    project.require_writable("import a dataset");
    check_new_name(project, options.name);
    data::DatasetFormat f = data::parse_dataset_format(format);
    if (f == data::DatasetFormat::Auto) f = data::detect_dataset_format(source);
    data::LoadResult loaded = data::load_detection_dataset(source, f, load_options);
    if (problems) {
        for (const auto& pr : loaded.problems)
            problems->push_back((pr.where.empty() ? "" : pr.where + ": ") + pr.what +
                                (pr.error ? "" : " (warning)"));
    }
    ImportOptions o = options;
    if (o.format.empty()) o.format = data::dataset_format_name(f);
    return import_dataset(project, loaded.dataset, o);
}

std::string free_dataset_name(Project& project, const std::string& wanted) {
    std::string name = wanted;
    for (int n = 2; find_dataset(project, name); ++n)
        name = wanted + "-" + std::to_string(n);
    return name;
}

namespace {

// A chat dataset's records as JSONL, the lines its version hash covers.
void write_chat_snapshot(Project& project, std::int64_t dataset_id, const fs::path& folder) {
    std::string text;
    auto s =
        project.db().prepare("SELECT record FROM chat_records WHERE dataset_id = ? ORDER BY idx");
    s.bind(1, dataset_id);
    while (s.step()) {
        text += s.column_text_view(0);
        text += '\n';
    }
    fs::create_directories(folder);
    write_file_atomically(folder / "data.jsonl", text);
}

}  // namespace

namespace {

// The one layout of snapshots: <project folder>/<project stem>.datasets/dataset-<id>-<hash12>/
// (-t<tags digest> added when images carry tags).
// The stem stays a path: a non-ASCII project name is not read as the ANSI code page.
fs::path snapshots_root(const Project& project) {
    fs::path beside = project.path().stem();
    beside += ".datasets";
    return project.folder() / beside;
}

std::string snapshot_prefix(std::int64_t dataset_id) {
    return "dataset-" + std::to_string(dataset_id) + "-";
}

// Tags do not change the dataset's version (they do not change what trains), but a snapshot
// carries them (data/formats/image_tags_file.h) for per-tag metrics: its name gains a digest of
// them, so a tag set since the last snapshot makes a new one. Empty when no image has a tag.
std::string tags_digest(Project& project, std::int64_t dataset_id) {
    auto s = project.db().prepare(
        "SELECT id, tags FROM images WHERE dataset_id = ? AND tags <> '{}' ORDER BY id");
    s.bind(1, dataset_id);
    std::string all;
    while (s.step())
        all += std::to_string(s.column_int64(0)) + "\t" + s.column_text(1) + "\n";
    return all.empty() ? std::string() : "-t" + sha256_hex(all).substr(0, 8);
}

}  // namespace

fs::path snapshot_dataset(Project& project, std::int64_t dataset_id) {
    const DatasetInfo info = get_dataset(project, dataset_id);
    const bool chat = info.kind == "chat";
    if (info.kind != "detection" && !chat)
        throw InputError(info.name,
                         "only detection and chat datasets are written as snapshots "
                         "(this one is " +
                             info.kind + ")");
    const fs::path folder =
        snapshots_root(project) / (snapshot_prefix(dataset_id) + info.version_hash.substr(0, 12) +
                                   (chat ? std::string() : tags_digest(project, dataset_id)));
    const fs::path yaml = folder / (chat ? "data.jsonl" : "data.yaml");
    std::error_code ec;
    if (fs::exists(yaml, ec)) return yaml;
    // Written beside its final name and renamed: a snapshot is whole or absent. The part is
    // this call's own (two calls may write the same version at once, in one process or two).
    static std::atomic<int> calls{0};
    fs::path part = folder;
    part +=
        ".part-" + std::to_string(crucible::platform::process_id()) + "-" + std::to_string(calls++);
    fs::remove_all(part, ec);
    if (chat)
        write_chat_snapshot(project, dataset_id, part);
    else
        data::save_detection_dataset(export_dataset(project, dataset_id), part,
                                     data::DatasetFormat::Yolo, data::ImageFiles::Link);
    fs::rename(part, folder, ec);
    if (ec) {  // another process wrote the same version meanwhile: use that one
        fs::remove_all(part, ec);
        if (!fs::exists(yaml, ec))
            throw Error("cannot write the dataset snapshot " + path_to_utf8(folder));
    }
    return yaml;
}

std::size_t write_labels_to_files(Project& project, std::int64_t dataset_id) {
    const DatasetInfo info = get_dataset(project, dataset_id);
    if (info.format == "voc")
        return data::write_voc_annotation_files(export_dataset(project, dataset_id),
                                                project.resolve_stored_path(info.source));
    if (info.format != "yolo")
        throw InputError(info.name, "its labels are " +
                                        (info.format.empty() ? "of no known format" : info.format) +
                                        "; only YOLO and VOC label files are written back "
                                        "(export the dataset to write it in another format)");
    const data::DetectionDataset dataset = export_dataset(project, dataset_id);
    // Class ids in the label files mean the names in data.yaml: both change together (a class
    // renamed, added or merged in the studio), or neither.
    const fs::path root = project.resolve_stored_path(info.source);
    // (A dataset whose data.yaml lies outside its root, `path: ..`, is not found: its labels are
    // written, its names stay as they are.)
    const fs::path yaml = data::find_yolo_yaml(root);
    const std::size_t names =
        !yaml.empty() && data::write_yolo_class_names(yaml, dataset.class_names) ? 1 : 0;
    return names + data::write_yolo_label_files(dataset);
}

fs::path export_dataset_to(Project& project, std::int64_t dataset_id, const fs::path& out,
                           const std::string& format) {
    data::DatasetFormat f = data::parse_dataset_format(format);
    if (f == data::DatasetFormat::Auto)
        throw InputError("format", "choose the export format: yolo, coco or voc");
    return data::save_detection_dataset(export_dataset(project, dataset_id), out, f);
}

std::vector<DatasetInfo> list_datasets(Project& project) {
    std::vector<DatasetInfo> out;
    auto s = project.db().prepare(std::string(kInfoSelect) + "ORDER BY d.id");
    while (s.step())
        out.push_back(read_info(s));
    return out;
}

std::optional<DatasetInfo> find_dataset(Project& project, const std::string& name) {
    auto s = project.db().prepare(std::string(kInfoSelect) + "WHERE d.name = ?");
    s.bind(1, name);
    if (!s.step()) return std::nullopt;
    return read_info(s);
}

DatasetInfo get_dataset(Project& project, std::int64_t dataset_id) {
    auto s = project.db().prepare(std::string(kInfoSelect) + "WHERE d.id = ?");
    s.bind(1, dataset_id);
    if (!s.step()) throw InputError("dataset", "no dataset with id " + std::to_string(dataset_id));
    return read_info(s);
}

void delete_dataset(Project& project, std::int64_t dataset_id) {
    project.require_writable("delete a dataset");
    Transaction tx(project.db());
    project.db().prepare("DELETE FROM datasets WHERE id = ?").bind_all(dataset_id).run();
    tx.commit();
    // Its snapshots go too, but for those a run of the project names (it trained on them).
    std::error_code ec;
    auto named = project.db().prepare("SELECT 1 FROM runs WHERE instr(options, ?) > 0");
    std::vector<fs::path> unused;
    for (fs::directory_iterator it(snapshots_root(project), ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = path_to_utf8(it->path().filename());
        if (name.rfind(snapshot_prefix(dataset_id), 0) != 0) continue;
        named.bind(1, name);
        if (!named.step()) unused.push_back(it->path());
        named.reset();
    }
    for (const auto& folder : unused)
        fs::remove_all(folder, ec);  // files that resist removal are only files
}

data::DetectionDataset export_dataset(Project& project, std::int64_t dataset_id) {
    get_dataset(project, dataset_id);  // throws when missing
    Database& db = project.db();
    data::DetectionDataset out;
    out.root = project.folder();
    {
        auto s = db.prepare("SELECT name FROM classes WHERE dataset_id = ? ORDER BY idx");
        s.bind(1, dataset_id);
        while (s.step())
            out.class_names.push_back(s.column_text(0));
    }
    std::unordered_map<std::int64_t, std::size_t> index;
    {
        auto s = db.prepare(
            "SELECT id, path, sha256, width, height, split, tags FROM images WHERE dataset_id = ? "
            "ORDER BY id");
        s.bind(1, dataset_id);
        while (s.step()) {
            data::ImageRecord img;
            std::string stored = s.column_text(1);
            img.path = project.resolve_stored_path(stored);
            img.sha256 = s.column_text(2);
            img.width = s.column_int(3);
            img.height = s.column_int(4);
            img.split = s.column_text(5);
            img.tags = tags_from_json(s.column_text_view(6), stored);
            index[s.column_int64(0)] = out.images.size();
            out.images.push_back(std::move(img));
        }
    }
    auto s = db.prepare(
        "SELECT b.image_id, b.cls, b.cx, b.cy, b.w, b.h, b.difficult FROM boxes b JOIN images i ON "
        "b.image_id "
        "= i.id WHERE i.dataset_id = ? ORDER BY b.id");
    s.bind(1, dataset_id);
    while (s.step()) {
        data::Box b{s.column_int(1),    s.column_double(2), s.column_double(3),
                    s.column_double(4), s.column_double(5), s.column_int(6) != 0};
        out.images[index.at(s.column_int64(0))].boxes.push_back(b);
    }
    return out;
}

std::vector<std::string> missing_images(Project& project, std::int64_t dataset_id) {
    std::vector<std::string> missing;
    auto s = project.db().prepare("SELECT path FROM images WHERE dataset_id = ? ORDER BY id");
    s.bind(1, dataset_id);
    while (s.step()) {
        std::string stored = s.column_text(0);
        std::error_code ec;
        if (!fs::is_regular_file(project.resolve_stored_path(stored), ec))
            missing.push_back(stored);
    }
    return missing;
}

std::int64_t create_chat_dataset(Project& project, const std::string& name,
                                 const std::vector<Json>& records) {
    project.require_writable("import chat records");
    check_new_name(project, name);
    Database& db = project.db();
    Transaction tx(db);
    db.prepare("INSERT INTO datasets(name, kind, created_at) VALUES(?, 'chat', ?)")
        .bind_all(name, unix_time_now())
        .run();
    std::int64_t id = db.last_insert_rowid();
    auto add = db.prepare("INSERT INTO chat_records(dataset_id, idx, record) VALUES(?, ?, ?)");
    Sha256 h;
    for (std::size_t i = 0; i < records.size(); ++i) {
        std::string text = records[i].dump(-1, ' ', false, Json::error_handler_t::strict);
        h.update(text + "\n");
        add.bind_all(id, static_cast<std::int64_t>(i), text).run();
    }
    db.prepare("UPDATE datasets SET version_hash = ? WHERE id = ?")
        .bind_all(h.hex_digest(), id)
        .run();
    tx.commit();
    return id;
}

std::vector<Json> read_chat_records(Project& project, std::int64_t dataset_id) {
    std::vector<Json> out;
    auto s =
        project.db().prepare("SELECT record FROM chat_records WHERE dataset_id = ? ORDER BY idx");
    s.bind(1, dataset_id);
    while (s.step())
        out.push_back(parse_json(s.column_text_view(0), "chat record"));
    return out;
}

}  // namespace crucible::store
