#include "ui/annotation_store.h"

#include "core/base/error.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/sqlite_db.h"

namespace crucible::ui {

DatasetContent load_dataset_content(store::Project& project, std::int64_t dataset_id) {
    // export_dataset lists images in row-id order; the ids come from the same order.
    data::DetectionDataset ds = store::export_dataset(project, dataset_id);
    DatasetContent out;
    out.dataset_id = dataset_id;
    out.format = store::get_dataset(project, dataset_id).format;
    out.class_names = ds.class_names;
    out.class_colors = store::class_colors(project, dataset_id);
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

}  // namespace crucible::ui
