#include "ui/dataset_checks.h"

#include <QObject>

#include "core/data/image_io.h"

namespace crucible::ui {

QStringList tag_texts(const ImageTags& tags) {
    QStringList out;
    for (const auto& [k, v] : tags)
        out << QString::fromStdString(k + "=" + v);
    return out;
}

bool has_tag(const ImageTags& tags, std::string_view key_value) {
    for (const auto& [k, v] : tags)  // an image has a few tags
        if (key_value.size() == k.size() + 1 + v.size() && key_value.starts_with(k) &&
            key_value[k.size()] == '=' && key_value.ends_with(v))
            return true;
    return false;
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
