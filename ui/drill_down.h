#pragma once
// Drill-down from a number to its images: the validation images behind a confusion-matrix cell
// or a class (from a run's per-image report, core/data/per_image_report.h), optionally those of
// one tag value (a production line, a station), in a table sortable by false positives, misses
// and mean IoU, the worst first. Double-clicking an image opens it in the annotation editor with
// its ground truth and the model's predictions drawn over it.
#include <QString>
#include <QWidget>
#include <optional>
#include <utility>

#include "core/data/per_image_report.h"

class QLabel;
class QLineEdit;
class QTableWidget;

namespace crucible::ui {

// Which images to show; unset parts do not filter.
struct DrillFilter {
    std::optional<std::pair<int, int>> cell;  // (predicted, true); the background = class count
    std::optional<int> cls;                   // a prediction or a true box of this class
    QString tag;                              // "key=value": images with that tag
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

  signals:
    void open_image(const data::ImageOutcome& image, double conf);

  private:
    void refill();

    data::PerImageReport report_;
    DrillFilter filter_;
    QLabel* caption_ = nullptr;
    QLineEdit* tag_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace crucible::ui
