#pragma once
// The run monitor's validation panels, drawn from data of a known shape (ui/validation_report.h):
// a sortable per-class metrics table, a confusion-matrix heat map (class names on the axes, raw
// counts or each true class normalized) and precision/recall curves per class with the
// all-classes mean. Each panel is created by the monitor only when its data arrived.
#include <QString>
#include <QWidget>
#include <vector>

#include "ui/validation_report.h"

class QCheckBox;
class QCPColorMap;
class QCustomPlot;
class QLabel;
class QPushButton;
class QStandardItemModel;
class QTableView;

namespace crucible::ui {

class PerClassTable : public QWidget {
    Q_OBJECT
  public:
    enum Column { kClass, kImages, kInstances, kP, kR, kMap50, kMap50_95, kColumns };
    static constexpr int kClassRole = Qt::UserRole + 1;  // the class number, on the name cell
    explicit PerClassTable(QWidget* parent = nullptr);

    // Replaces the rows (the current sort order is kept); `source` says where they come from
    // ("epoch 12", "best weights").
    void set_rows(const std::vector<ClassMetricsRow>& rows, const QString& source);
    int row_count() const;
    // The text shown in a cell, in the order on screen.
    QString text(int row, int column) const;
    void sort_by(int column, Qt::SortOrder order);
    QString source() const;
    QTableView* view() const { return view_; }
    QPushButton* by_tag_button() const { return by_tag_; }

  signals:
    // A double-clicked row: drill down to the images with boxes or predictions of the class.
    void class_activated(int cls);
    // "Metrics by tag…": the same metrics for each value of the images' tags.
    void tag_breakdown_requested();

  private:
    QLabel* source_ = nullptr;
    QPushButton* by_tag_ = nullptr;
    QTableView* view_ = nullptr;
    QStandardItemModel* model_ = nullptr;
};

class ConfusionMatrixPanel : public QWidget {
    Q_OBJECT
  public:
    explicit ConfusionMatrixPanel(QWidget* parent = nullptr);

    void set_data(const ConfusionData& data);
    const ConfusionData& data() const { return data_; }
    // Normalized: each true class (column) sums to 1; else the counts.
    void set_normalized(bool on);
    bool normalized() const;
    // The value drawn in the cell of `predicted` (row) and `truth` (column).
    double value(int predicted, int truth) const;
    // The value the color map holds for that cell (what is painted).
    double painted_value(int predicted, int truth) const;
    QString axis_label(int index) const;  // tick label of class `index` on both axes
    QCustomPlot* plot() const { return plot_; }
    QCPColorMap* color_map() const { return map_; }
    // Where the cell of `predicted` and `truth` is drawn, in the plot's pixels (tests click it).
    QPoint cell_position(int predicted, int truth) const;

  signals:
    // A click on a cell: drill down to the images behind it.
    void cell_clicked(int predicted, int truth);

  private:
    void redraw();

    ConfusionData data_;
    QCheckBox* normalize_ = nullptr;
    QLabel* caption_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QCPColorMap* map_ = nullptr;
};

class PrCurvePanel : public QWidget {
    Q_OBJECT
  public:
    explicit PrCurvePanel(QWidget* parent = nullptr);

    // `per_class` (optional) gives each class's mAP50 for the legend; otherwise the area under
    // the curve is shown.
    void set_curves(const PrCurves& curves, const std::vector<ClassMetricsRow>& per_class = {});
    const PrCurves& curves() const { return curves_; }
    // One graph per class, then the all-classes mean (the last graph).
    int graph_count() const;
    int mean_graph() const { return graph_count() - 1; }
    QString graph_name(int graph) const;
    QCustomPlot* plot() const { return plot_; }
    // Where class `graph`'s curve passes at `recall`, in the plot's pixels (tests click it).
    QPoint point_position(int graph, double recall) const;

  signals:
    // A click on (or within a few pixels of) a class's curve: drill down to the images behind
    // that point (core/data/pr_operating_point.h).
    void point_clicked(int cls, double recall);

  private:
    // The class curve nearest to a pixel, vertically, within `reach` pixels; -1 if none.
    int curve_near(const QPoint& pixel, int reach) const;
    double precision_at(int graph, double recall) const;

    PrCurves curves_;
    QCustomPlot* plot_ = nullptr;
};

}  // namespace crucible::ui
