#include "ui/dataset_checks.h"

#include <QObject>

#include "core/data/image_io.h"
#include "core/store/dataset_store.h"

namespace crucible::ui {

std::vector<ImageTags> read_image_tags(store::Project& project, const DatasetContent& content) {
    // export_dataset lists images in row order with absolute paths, as load_dataset_content; a
    // path that differs (the content is older than the project) gets no tags.
    const data::DetectionDataset ds = store::export_dataset(project, content.dataset_id);
    std::map<std::filesystem::path, const ImageTags*> by_path;
    for (const auto& rec : ds.images)
        by_path[rec.path.is_absolute() ? rec.path : ds.root / rec.path] = &rec.tags;
    std::vector<ImageTags> out(content.images.size());
    for (std::size_t i = 0; i < content.images.size(); ++i)
        if (auto it = by_path.find(content.images[i].path); it != by_path.end())
            out[i] = *it->second;
    return out;
}

QStringList tag_texts(const ImageTags& tags) {
    QStringList out;
    for (const auto& [k, v] : tags)
        out << QString::fromStdString(k + "=" + v);
    return out;
}

std::vector<std::string> check_image_files(const std::vector<std::filesystem::path>& files,
                                           const std::atomic<bool>* stop) {
    std::vector<std::string> out(files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
        if (stop && stop->load()) break;
        out[i] = data::image_file_problem(files[i]);
    }
    return out;
}

bool ImageProblems::matches(ProblemFilter filter) const {
    switch (filter) {
        case ProblemFilter::All:
            return true;
        case ProblemFilter::AnyProblem:
            return any();
        case ProblemFilter::UnreadableImage:
            return !file.isEmpty();
        case ProblemFilter::BadBox:
            return !boxes.isEmpty();
        case ProblemFilter::NoBoxes:
            return no_boxes;
    }
    return true;
}

QString ImageProblems::text() const {
    QStringList lines;
    if (!file.isEmpty()) lines << file;
    lines << boxes;
    if (no_boxes) lines << QObject::tr("no boxes (background image)");
    return lines.join(QLatin1Char('\n'));
}

ImageProblems image_problems(const DatasetImage& image, int class_count,
                             const QString& file_problem) {
    ImageProblems out;
    out.file = file_problem;
    for (std::size_t b = 0; b < image.boxes.size(); ++b) {
        const std::string what = data::box_problem(image.boxes[b], class_count);
        if (!what.empty())
            out.boxes << QStringLiteral("box %1: %2").arg(b + 1).arg(QString::fromStdString(what));
    }
    out.no_boxes = image.boxes.empty();
    return out;
}

}  // namespace crucible::ui
