#pragma once
// Detection metrics as the user sees them: JSON with the Ultralytics `results.csv` names, the
// `eval.per_class` rows of DESIGN.md, and the text table the reference prints after validation.
#include <map>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "plugins/detect/metrics/detection_metrics.h"

namespace crucible::detect {

// Name of class `cls`: class_names[cls] when present, else the number.
std::string class_display_name(const std::vector<std::string>& class_names, int cls);

// {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)"} — the
// `values` of an eval event and the results.csv columns.
Json metric_values_json(const DetectionMetrics& m);

// `eval.per_class` rows: {class, name, images, instances, p, r, map50, map50_95}.
Json per_class_json(const DetectionMetrics& m, const std::vector<std::string>& class_names);

// Everything: the values above plus "fitness", "images", "instances", "per_class",
// and "best_confidence" (where P and R are read).
Json metrics_json(const DetectionMetrics& m, const std::vector<std::string>& class_names);

// {"names": [..., "background"], "matrix": rows = predicted class, columns = true class,
//  "conf": .., "iou": ..}
Json confusion_matrix_json(const ConfusionMatrix& cm, const std::vector<std::string>& class_names);

// PR-curve data: {"recall": grid, "classes": [{"class", "name", "precision": [1000]}]}.
Json pr_curve_json(const DetectionMetrics& m, const std::vector<std::string>& class_names);

// The reference's validation table: header, an `all` row and one row per class.
std::string results_table(const DetectionMetrics& m, const std::vector<std::string>& class_names,
                          bool per_class = true);

// One validation as JSON: metrics_json + "confusion_matrix"; with a tag key, "by_tag":
// {tag_key: {value: metrics_json}}; with curves, "pr_curve". Every validation prints this shape
// (`crucible val` with model= or predictions=, artifacts/val_metrics.json).
struct ValidationReport {
    const DetectionMetrics& metrics;
    const ConfusionMatrix& confusion;
    const std::vector<std::string>& class_names;
    std::string tag_key;                             // "" = no per-tag breakdown
    std::map<std::string, DetectionMetrics> by_tag;  // value of the tag -> metrics
};
Json validation_json(const ValidationReport& report, bool curves);
// The text report: the table, the fitness line, one table per tag value (or a note that no image
// has the tag).
std::string validation_text(const ValidationReport& report);

}  // namespace crucible::detect
