#include "core/store/dataset_edit.h"

#include <unordered_map>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/store/dataset_store.h"
#include "core/store/sqlite_db.h"

namespace crucible::store {

namespace {

std::vector<std::string> class_names(Database& db, std::int64_t dataset_id) {
    std::vector<std::string> names;
    auto s = db.prepare("SELECT name FROM classes WHERE dataset_id = ? ORDER BY idx");
    s.bind(1, dataset_id);
    while (s.step())
        names.push_back(s.column_text(0));
    return names;
}

// The dataset's content changed, so does its version (inside the caller's transaction).
void refresh_version_hash(Database& db, std::int64_t dataset_id) {
    std::vector<data::ImageRecord> images;
    std::unordered_map<std::int64_t, std::size_t> index;
    {
        auto s =
            db.prepare("SELECT id, sha256, split FROM images WHERE dataset_id = ? ORDER BY id");
        s.bind(1, dataset_id);
        while (s.step()) {
            data::ImageRecord r;
            r.sha256 = s.column_text(1);
            r.split = s.column_text(2);
            index[s.column_int64(0)] = images.size();
            images.push_back(std::move(r));
        }
    }
    {
        auto s = db.prepare(
            "SELECT b.image_id, b.cls, b.cx, b.cy, b.w, b.h, b.difficult FROM boxes b JOIN images "
            "i ON b.image_id = i.id WHERE i.dataset_id = ? ORDER BY b.id");
        s.bind(1, dataset_id);
        while (s.step())
            images[index.at(s.column_int64(0))].boxes.push_back(
                {s.column_int(1), s.column_double(2), s.column_double(3), s.column_double(4),
                 s.column_double(5), s.column_int(6) != 0});
    }
    db.prepare("UPDATE datasets SET version_hash = ? WHERE id = ?")
        .bind_all(dataset_version_hash(class_names(db, dataset_id), images), dataset_id)
        .run();
}

// The dataset's classes, checked to exist; `index` checked to be one of them.
std::vector<std::string> classes_for_edit(Project& project, std::int64_t dataset_id, int index,
                                          const char* what) {
    project.require_writable(what);
    const DatasetInfo info = get_dataset(project, dataset_id);  // InputError when missing
    auto names = class_names(project.db(), dataset_id);
    if (index < 0 || index >= static_cast<int>(names.size()))
        throw InputError(info.name, "has no class " + std::to_string(index) + " (it has " +
                                        std::to_string(names.size()) + ")");
    return names;
}

void check_new_class_name(const std::vector<std::string>& names, const std::string& name,
                          int except = -1) {
    if (name.empty()) throw InputError("class name", "a class needs a name");
    if (name.size() > 200) throw InputError("class name", "is longer than 200 bytes");
    for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == name && static_cast<int>(i) != except)
            throw InputError("class name", "the dataset has a class '" + name + "' already");
}

}  // namespace

std::vector<data::Box> read_image_boxes(Project& project, std::int64_t image_id) {
    std::vector<data::Box> out;
    auto s = project.db().prepare(
        "SELECT cls, cx, cy, w, h, difficult FROM boxes WHERE image_id = ? ORDER BY id");
    s.bind(1, image_id);
    while (s.step())
        out.push_back({s.column_int(0), s.column_double(1), s.column_double(2), s.column_double(3),
                       s.column_double(4), s.column_int(5) != 0});
    return out;
}

void save_image_boxes(Project& project, std::int64_t dataset_id, std::int64_t image_id,
                      const std::vector<data::Box>& boxes) {
    project.require_writable("edit boxes");
    Database& db = project.db();
    const std::string where = "image " + std::to_string(image_id);
    const int classes = static_cast<int>(class_names(db, dataset_id).size());
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        std::string problem = data::box_problem(boxes[i], classes);
        if (!problem.empty())
            throw InputError(where, "box " + std::to_string(i + 1) + ": " + problem);
    }
    Transaction tx(db);
    {
        auto s = db.prepare("SELECT dataset_id FROM images WHERE id = ?");
        s.bind(1, image_id);
        if (!s.step() || s.column_int64(0) != dataset_id)
            throw InputError(where, "is not an image of dataset " + std::to_string(dataset_id));
    }
    db.prepare("DELETE FROM boxes WHERE image_id = ?").bind_all(image_id).run();
    auto add = db.prepare(
        "INSERT INTO boxes(image_id, cls, cx, cy, w, h, difficult) VALUES(?, ?, ?, ?, ?, ?, ?)");
    for (const auto& b : boxes) {
        add.bind_all(image_id, b.cls, b.cx, b.cy, b.w, b.h, b.difficult ? 1 : 0).run();
        add.reset();
    }
    refresh_version_hash(db, dataset_id);
    tx.commit();
}

int add_class(Project& project, std::int64_t dataset_id, const std::string& name) {
    project.require_writable("add a class");
    get_dataset(project, dataset_id);  // InputError when missing
    Database& db = project.db();
    const auto names = class_names(db, dataset_id);
    check_new_class_name(names, name);
    Transaction tx(db);
    const int index = static_cast<int>(names.size());
    db.prepare("INSERT INTO classes(dataset_id, idx, name) VALUES(?, ?, ?)")
        .bind_all(dataset_id, index, name)
        .run();
    refresh_version_hash(db, dataset_id);
    tx.commit();
    return index;
}

void rename_class(Project& project, std::int64_t dataset_id, int index, const std::string& name) {
    const auto names = classes_for_edit(project, dataset_id, index, "rename a class");
    check_new_class_name(names, name, index);
    Database& db = project.db();
    Transaction tx(db);
    db.prepare("UPDATE classes SET name = ? WHERE dataset_id = ? AND idx = ?")
        .bind_all(name, dataset_id, index)
        .run();
    refresh_version_hash(db, dataset_id);
    tx.commit();
}

std::int64_t merge_class(Project& project, std::int64_t dataset_id, int from, int into) {
    const auto names = classes_for_edit(project, dataset_id, from, "merge classes");
    if (into < 0 || into >= static_cast<int>(names.size()))
        throw InputError("class", "no class " + std::to_string(into) + " to merge into");
    if (into == from) throw InputError("class", "a class cannot be merged into itself");
    Database& db = project.db();
    Transaction tx(db);
    const char* in_dataset = " AND image_id IN (SELECT id FROM images WHERE dataset_id = ?)";
    const std::int64_t moved =
        db.prepare(std::string("UPDATE boxes SET cls = ? WHERE cls = ?") + in_dataset)
            .bind_all(into, from, dataset_id)
            .run();
    db.prepare(std::string("UPDATE boxes SET cls = cls - 1 WHERE cls > ?") + in_dataset)
        .bind_all(from, dataset_id)
        .run();
    db.prepare("DELETE FROM classes WHERE dataset_id = ? AND idx = ?")
        .bind_all(dataset_id, from)
        .run();
    // Two passes through negative indexes: moving a key onto its neighbour's in one UPDATE
    // could meet the neighbour not yet moved (a primary key clash).
    db.prepare("UPDATE classes SET idx = -idx WHERE dataset_id = ? AND idx > ?")
        .bind_all(dataset_id, from)
        .run();
    db.prepare("UPDATE classes SET idx = -idx - 1 WHERE dataset_id = ? AND idx < 0")
        .bind_all(dataset_id)
        .run();
    refresh_version_hash(db, dataset_id);
    tx.commit();
    return moved;
}

void set_class_color(Project& project, std::int64_t dataset_id, int index,
                     const std::string& color) {
    classes_for_edit(project, dataset_id, index, "colour a class");
    const bool hex = color.size() == 7 && color[0] == '#' &&
                     color.find_first_not_of("0123456789abcdefABCDEF", 1) == std::string::npos;
    if (!color.empty() && !hex)
        throw InputError("class colour", "'" + color + "' is not a colour like #1f77b4");
    project.db()
        .prepare("UPDATE classes SET color = ? WHERE dataset_id = ? AND idx = ?")
        .bind_all(color, dataset_id, index)
        .run();
}

std::vector<std::string> dataset_class_names(Project& project, std::int64_t dataset_id) {
    return class_names(project.db(), dataset_id);
}

std::vector<std::string> class_colors(Project& project, std::int64_t dataset_id) {
    std::vector<std::string> out;
    auto s = project.db().prepare("SELECT color FROM classes WHERE dataset_id = ? ORDER BY idx");
    s.bind(1, dataset_id);
    while (s.step())
        out.push_back(s.column_text(0));
    return out;
}

std::vector<std::int64_t> class_box_counts(Project& project, std::int64_t dataset_id) {
    std::vector<std::int64_t> out(class_names(project.db(), dataset_id).size(), 0);
    auto s = project.db().prepare(
        "SELECT b.cls, count(*) FROM boxes b JOIN images i ON b.image_id = i.id "
        "WHERE i.dataset_id = ? GROUP BY b.cls");
    s.bind(1, dataset_id);
    while (s.step()) {
        const auto cls = s.column_int64(0);
        if (cls >= 0 && cls < static_cast<std::int64_t>(out.size()))
            out[static_cast<std::size_t>(cls)] = s.column_int64(1);
    }
    return out;
}

void set_image_tag(Project& project, std::int64_t image_id, const std::string& key,
                   const std::string& value) {
    project.require_writable("tag an image");
    if (key.empty()) throw InputError("tag", "a tag needs a name");
    Database& db = project.db();
    Transaction tx(db);
    auto s = db.prepare("SELECT tags FROM images WHERE id = ?");
    s.bind(1, image_id);
    if (!s.step()) throw InputError("image", "no image with id " + std::to_string(image_id));
    Json tags = parse_json(s.column_text_view(0), "tags of image " + std::to_string(image_id));
    if (!tags.is_object()) tags = Json::object();
    if (value.empty())
        tags.erase(key);
    else
        tags[key] = value;
    db.prepare("UPDATE images SET tags = ? WHERE id = ?").bind_all(tags.dump(), image_id).run();
    tx.commit();
}

}  // namespace crucible::store
