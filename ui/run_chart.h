#pragma once
// One metric of one or more runs drawn with QCustomPlot: raw curve (faint when smoothed) and the
// TensorBoard-style EMA, min/max-decimated to the plot's pixel width so a million points draw
// as fast as a thousand; log-y; x by step, epoch or wall time; a hover read-out of the exact
// values nearest the cursor; export of the picture (PNG) and of the data (CSV).
#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "ui/run_series.h"

class QCustomPlot;
class QLabel;
class QMouseEvent;

namespace crucible::ui {

// A run as the charts see it: a name and its series (owned by the monitor).
struct ChartRun {
    QString name;
    const RunSeries* series = nullptr;
};

class RunChart : public QWidget {
    Q_OBJECT
  public:
    explicit RunChart(QString metric, QWidget* parent = nullptr);

    const QString& metric() const { return metric_; }
    void set_runs(std::vector<ChartRun> runs);
    void set_smoothing(double weight);  // 0 = off, < 1
    void set_log_y(bool on);
    void set_x_axis(XAxis axis);
    double smoothing() const { return smoothing_; }
    bool log_y() const { return log_y_; }
    XAxis x_axis() const { return x_axis_; }

    // Rebuilds the graphs from the series (call after new events); draws on the next frame.
    void refresh();

    QCustomPlot* plot() const { return plot_; }
    // Points of the curve drawn for run `run` (the smoothed one when smoothing is on).
    int drawn_points(int run) const;
    // Text of the read-out for plot x coordinate `x` (also shown under the chart on hover).
    QString readout_at(double x) const;
    QString readout() const;

    bool export_png(const QString& file, int width = 1200, int height = 700);
    // run,step,epoch,time,value,smoothed — every point, not the decimated ones.
    bool export_csv(const QString& file) const;

  private:
    void on_mouse_move(QMouseEvent* event);
    // Derived curves of one run, extended as points arrive instead of recomputed per frame.
    struct Curve {
        const RunSeries* owner = nullptr;
        std::uint64_t removals = 0;
        double weight = -1;
        std::vector<double> time;    // wall-time x (minutes), when that axis is used
        std::vector<double> smooth;  // EMA of the values
        double ema_last = 0, ema_debias = 0;
        MinMaxIndex raw_index, smooth_index;  // extremes of the values / of `smooth`
    };
    Curve& curve(std::size_t run, const Series& s) const;
    const std::vector<double>& x_values(std::size_t run, const Series& s) const;
    const Series* series_of(std::size_t run) const;

    QString metric_;
    std::vector<ChartRun> runs_;
    double smoothing_ = 0.6;
    bool log_y_ = false;
    XAxis x_axis_ = XAxis::Step;
    QCustomPlot* plot_ = nullptr;
    QLabel* readout_ = nullptr;
    std::vector<int> smoothed_graph_;  // graph index of each run's main curve, -1 when absent
    mutable std::vector<Curve> curves_;
};

QString x_axis_label(XAxis axis);

}  // namespace crucible::ui
