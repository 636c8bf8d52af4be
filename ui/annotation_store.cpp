#include "ui/annotation_store.h"

#include <unordered_map>

#include "core/base/error.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/sqlite_db.h"

namespace crucible::ui {

DatasetContent load_dataset_content(store::Project& project, std::int64_t dataset_id) {
    // export_dataset lists images in row-id order; the ids come from the same order.
    data::DetectionDataset ds = store::export_dataset(project, dataset_id);
    DatasetContent out;
    out.dataset_id = dataset_id;
    out.class_names = ds.class_names;
    auto s = project.db().prepare("SELECT id FROM images WHERE dataset_id = ? ORDER BY id");
    s.bind(1, dataset_id);
    std::size_t i = 0;
    while (s.step()) {
        if (i >= ds.images.size()) break;
        auto& rec = ds.images[i++];
        DatasetImage img;
        img.id = s.column_int64(0);
        img.path = rec.path.is_absolute() ? rec.path : ds.root / rec.path;
        img.split = rec.split;
        img.width = rec.width;
        img.height = rec.height;
        img.boxes = std::move(rec.boxes);
        img.tags = std::move(rec.tags);
        out.images.push_back(std::move(img));
    }
    return out;
}

std::vector<data::Box> read_image_boxes(store::Project& project, std::int64_t image_id) {
    std::vector<data::Box> out;
    auto s = project.db().prepare(
        "SELECT cls, cx, cy, w, h, difficult FROM boxes WHERE image_id = ? ORDER BY id");
    s.bind(1, image_id);
    while (s.step())
        out.push_back({s.column_int(0), s.column_double(1), s.column_double(2), s.column_double(3),
                       s.column_double(4), s.column_int(5) != 0});
    return out;
}

void save_image_boxes(store::Project& project, std::int64_t dataset_id, std::int64_t image_id,
                      const std::vector<data::Box>& boxes) {
    project.require_writable("edit boxes");
    store::Database& db = project.db();
    const std::string where = "image " + std::to_string(image_id);
    int classes = 0;
    {
        auto s = db.prepare("SELECT count(*) FROM classes WHERE dataset_id = ?");
        s.bind(1, dataset_id);
        if (s.step()) classes = s.column_int(0);
    }
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        std::string problem = data::box_problem(boxes[i], classes);
        if (!problem.empty())
            throw InputError(where, "box " + std::to_string(i + 1) + ": " + problem);
    }
    store::Transaction tx(db);
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
    // The dataset's content changed, so does its version.
    std::vector<std::string> names;
    {
        auto s = db.prepare("SELECT name FROM classes WHERE dataset_id = ? ORDER BY idx");
        s.bind(1, dataset_id);
        while (s.step())
            names.push_back(s.column_text(0));
    }
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
        .bind_all(store::dataset_version_hash(names, images), dataset_id)
        .run();
    tx.commit();
}

}  // namespace crucible::ui
