#pragma once
// Scoring a folder of prediction files against a dataset's labels (`crucible val detect
// predictions=DIR`): one `<image stem>.txt` per image in the Ultralytics `save_txt save_conf`
// layout (`class cx cy w h conf` per line, normalized); a missing file means no predictions.
// Files are parsed strictly; every bad line is reported as "file:line", never a crash.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/json.h"
#include "core/data/detection_types.h"
#include "plugins/detect/metrics/detection_metrics.h"

namespace crucible::detect {

struct TextProblem {
    std::string where;  // "file:line"
    std::string what;
};

struct NormalizedPrediction {
    int cls = 0;
    double cx = 0, cy = 0, w = 0, h = 0;  // normalized to [0, 1]
    float conf = 0;
};

// Parses a prediction file's text. `class_count` > 0 also checks the class id range. Bad rows are
// appended to `problems` (where = "<where_file>:<line>") and skipped. Blank lines, a UTF-8 BOM
// and CRLF line ends are accepted.
std::vector<NormalizedPrediction> parse_prediction_text(std::string_view text,
                                                        const std::string& where_file,
                                                        int class_count,
                                                        std::vector<TextProblem>& problems);

// Parses a label file's text (`class cx cy w h`, or a polygon `class x1 y1 x2 y2 ...` turned into
// its bounding box), with the same reporting.
std::vector<data::Box> parse_label_text(std::string_view text, const std::string& where_file,
                                        int class_count, std::vector<TextProblem>& problems);

// A folder of label .txt files as a dataset (one image per file, named by the file's stem; image
// sizes unknown). A `classes.txt` in the folder gives the class names (one per line) and is not
// an image. Throws InputError listing the bad lines when any file has one.
data::DetectionDataset load_label_folder(const std::filesystem::path& dir);

struct PredictionFolderOptions {
    std::string split;    // only images of this split; empty = all images
    int imgsz = 640;      // pixel scale for images of unknown size (IoU does not depend on it)
    std::string tag_key;  // non-empty: also break the metrics down by this image tag
    double confusion_conf = 0.25;
    double confusion_iou = 0.45;
    std::uint64_t max_file_bytes = 64ull << 20;
};

struct PredictionFolderResult {
    DetectionMetrics metrics;
    std::map<std::string, DetectionMetrics> by_tag;
    ConfusionMatrix confusion{0};
    std::vector<std::string> class_names;
    std::filesystem::path predictions_dir;  // the folder actually read (DIR or DIR/labels)
    int prediction_files = 0;               // files that matched an image
    long long predictions = 0;
    std::vector<std::string> unmatched_files;  // prediction files that name no image
};

// Scores the prediction files in `predictions_dir` (or in its `labels/` sub-folder when it holds
// no .txt file itself) against `dataset`. Throws InputError naming the folder when it cannot be
// read, naming two images that share a stem, or listing every bad prediction line.
PredictionFolderResult evaluate_prediction_folder(const data::DetectionDataset& dataset,
                                                  const std::filesystem::path& predictions_dir,
                                                  const PredictionFolderOptions& options = {});

// JSON with the results.csv names (see metrics_report.h) plus "confusion_matrix",
// "prediction_files", "unmatched_prediction_files" and, with a tag, "by_tag": {key: {value: ...}}.
Json prediction_folder_json(const PredictionFolderResult& result, const std::string& tag_key = "");

}  // namespace crucible::detect
