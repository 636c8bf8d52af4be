#pragma once
// What the monitor's validation panels draw, read from data of a known *shape* (never from a task
// id, DESIGN.md "Task plugins"): the `per_class` rows of an `eval` event ({class, name?, images,
// instances, p, r, map50, map50_95}) and a validation report such as a run's
// artifacts/val_metrics.json, which may hold "confusion_matrix" ({"names": [..., "background"],
// "matrix": rows = predicted class, columns = true class, "conf", "iou"}), "pr_curve"
// ({"recall": grid, "classes": [{"class", "name", "precision": [one per grid point]}]}) and
// "per_class". Values written as null (a NaN in JSON) read as NaN. Malformed input throws
// InputError naming the field.
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

#include "core/base/json.h"

namespace crucible::ui {

struct ClassMetricsRow {
    int cls = 0;
    QString name;
    double images = 0, instances = 0;
    double p = 0, r = 0, map50 = 0, map50_95 = 0;
};

// `names` names classes whose row has no "name" (else the class number is shown).
std::vector<ClassMetricsRow> parse_per_class(const Json& rows, const QStringList& names = {});

struct ConfusionData {
    QStringList names;                        // the classes, then "background"
    std::vector<std::vector<double>> counts;  // [predicted][true], names.size() squared
    double conf = 0, iou = 0;
    int size() const { return static_cast<int>(names.size()); }
    // Each true class (column) divided by its total, as the reference's normalized plot.
    std::vector<std::vector<double>> normalized() const;
};

ConfusionData parse_confusion(const Json& confusion);

struct PrCurve {
    int cls = 0;
    QString name;
    std::vector<double> precision;  // one per recall grid point
};

struct PrCurves {
    std::vector<double> recall;
    std::vector<PrCurve> classes;
    // Precision averaged over the classes at each recall point (NaN points skipped).
    std::vector<double> mean_precision() const;
};

PrCurves parse_pr_curves(const Json& pr_curve);

// A validation report; each part is present only when the report holds it.
struct ValidationData {
    std::optional<ConfusionData> confusion;
    std::optional<PrCurves> curves;
    std::vector<ClassMetricsRow> per_class;
    bool empty() const { return !confusion && !curves && per_class.empty(); }
};

ValidationData parse_validation_report(const Json& report);

// Area under a precision/recall curve by the trapezoid rule (NaN points skipped).
double curve_area(const std::vector<double>& recall, const std::vector<double>& precision);

}  // namespace crucible::ui
