#pragma once
// Drill-down from a number to its images: the validation images behind a confusion-matrix cell,
// a class, a point of a class's PR curve (core/data/pr_operating_point.h) or a tag value (a
// production line, a station), from a run's per-image report (core/data/per_image_report.h), in a
// table sortable by false positives, misses and mean IoU, the worst first. Double-clicking an
// image opens it in the annotation editor with its ground truth and the model's predictions
// drawn over it. TagMetricsView lists the report's metrics per tag value; a row drills down.
#include <QString>
#include <QWidget>
#include <optional>
#include <utility>

#include "core/data/per_image_report.h"
#include "core/data/pr_operating_point.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QTableWidget;

namespace crucible::ui {

// Which images to show; unset parts do not filter.
struct DrillFilter {
    std::optional<std::pair<int, int>> cell;  // (predicted, true); the background = class count
    std::optional<int> cls;                   // a prediction or a true box of this class
    // With cls: the point of the class's PR curve at this recall; the images with a false
    // positive, a miss or a true positive of the class at its confidence threshold.
    std::optional<double> recall;
    QString tag;  // "key=value": images with that tag
    // The cell, class (without recall) and tag parts; the view applies the recall.
    bool matches(const data::ImageOutcome& image) const;
    // "predicted dent, true scratch", "class dent", "station=3", joined by " · ".
    QString describe(const std::vector<std::string>& names) const;
};

class DrillDownView : public QWidget {
    Q_OBJECT
  public:
    enum Column { kImage, kFalsePositives, kMisses, kMeanIou, kTruePositives, kTags, kColumns };

    DrillDownView(data::PerImageReport report, DrillFilter filter, QWidget* parent = nullptr);

    // The images shown, in the order on screen.
    int row_count() const;
    const data::ImageOutcome& image_at(int row) const;
    void set_tag_filter(const QString& key_value);
    void sort_by(int column, Qt::SortOrder order);
    const data::PerImageReport& report() const { return report_; }
    QTableWidget* table() const { return table_; }
    // Set when drilling from a PR-curve point: its threshold and counts.
    const std::optional<data::OperatingPoint>& operating_point() const { return point_; }
    // The confidence from which predictions are shown on an opened image.
    double shown_conf() const { return point_ ? point_->conf : report_.conf; }

  signals:
    void open_image(const data::ImageOutcome& image, double conf);

  private:
    void refill();

    data::PerImageReport report_;
    DrillFilter filter_;
    std::optional<data::OperatingPoint> point_;
    QLabel* caption_ = nullptr;
    QLineEdit* tag_ = nullptr;
    QTableWidget* table_ = nullptr;
};

// The report's metrics for each value of each image tag, sortable; double-clicking a row asks
// for the images of that value.
class TagMetricsView : public QWidget {
    Q_OBJECT
  public:
    enum Column { kValue, kImages, kInstances, kP, kR, kMap50, kMap50_95, kColumns };
    explicit TagMetricsView(data::PerImageReport report, QWidget* parent = nullptr);

    QStringList keys() const;  // the tag keys, in the chooser's order
    void show_key(const QString& key);
    int row_count() const;
    QString value_at(int row) const;  // in the order on screen
    const data::TagMetrics& metrics_at(int row) const;
    QTableWidget* table() const { return table_; }

  signals:
    void tag_activated(const QString& key_value);  // "station=3"

  private:
    data::PerImageReport report_;
    QComboBox* key_ = nullptr;
    QLabel* caption_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace crucible::ui
