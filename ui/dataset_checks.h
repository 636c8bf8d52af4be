#pragma once
// What the dataset view filters on besides class and split: each image's tags (free-form
// key=value pairs kept in the project, DatasetImage::tags) and its validation problems.
// The project keeps no validation results, so problems are found here with core/data's own
// checks, the ones `crucible dataset validate` runs: the image file (missing, empty, truncated,
// over the pixel limit: data::image_file_problem, which reads the whole file and so runs in the
// background) and every box (data::box_problem); an image without boxes is a background image,
// listed so it can be found, not counted as a problem (as validation counts, never flags it).
#include <QString>
#include <QStringList>
#include <atomic>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ui/annotation_store.h"

namespace crucible::ui {

// "key=value" texts of the tags.
QStringList tag_texts(const ImageTags& tags);
// Whether `tags` holds the tag whose "key=value" text is `key_value` (no text built).
bool has_tag(const ImageTags& tags, std::string_view key_value);

// data::image_file_problem of each file ("" when fine); stops early (rest "") when `stop` is set.
std::vector<std::string> check_image_files(const std::vector<std::filesystem::path>& files,
                                           const std::atomic<bool>* stop = nullptr);

// What the problem filter offers.
enum class ProblemFilter { All, AnyProblem, UnreadableImage, BadBox, NoBoxes };

// Problems of one image: its file problem (from check_image_files) and its boxes'.
struct ImageProblems {
    QString file;       // empty when the file is fine or not checked yet
    QStringList boxes;  // "box 2: width is negative"
    bool no_boxes = false;
    bool any() const { return !file.isEmpty() || !boxes.isEmpty(); }
    bool matches(ProblemFilter filter) const;
    QString text() const;  // for a tooltip; empty when nothing to say
};

ImageProblems image_problems(const DatasetImage& image, int class_count,
                             const QString& file_problem);

}  // namespace crucible::ui
