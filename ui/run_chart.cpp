#include "ui/run_chart.h"

#include <qcustomplot.h>
#include <QFile>
#include <QLabel>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/store/tidy_csv.h"
#include "ui/plot_style.h"

namespace crucible::ui {

namespace {

const QColor kPalette[] = {QColor(31, 119, 180),  QColor(255, 127, 14),  QColor(44, 160, 44),
                           QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                           QColor(227, 119, 194), QColor(127, 127, 127)};

QColor run_color(std::size_t i) {
    return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

void set_graph(QCPGraph* g, const std::vector<Point>& pts, bool log_y) {
    QVector<double> x, y;
    x.reserve(static_cast<qsizetype>(pts.size()));
    y.reserve(static_cast<qsizetype>(pts.size()));
    for (const auto& p : pts) {
        if (!std::isfinite(p.y) || (log_y && p.y <= 0)) continue;
        x.push_back(p.x);
        y.push_back(p.y);
    }
    g->setData(x, y, true);
}

}  // namespace

QString x_axis_label(XAxis axis) {
    switch (axis) {
        case XAxis::Epoch:
            return QObject::tr("epoch");
        case XAxis::WallTime:
            return QObject::tr("minutes since start");
        case XAxis::Step:
            break;
    }
    return QObject::tr("step");
}

RunChart::RunChart(QString metric, QWidget* parent) : QWidget(parent), metric_(std::move(metric)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    plot_ = new QCustomPlot(this);
    plot_->setMinimumSize(260, 180);
    plot_->setNotAntialiasedElements(QCP::aeAll);        // fast on the software renderer
    plot_->setPlottingHint(QCP::phFastPolylines, true);  // a curve is one polyline, not segments
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, metric_));
    plot_->legend->setVisible(false);
    follow_palette(plot_);
    plot_->setMouseTracking(true);
    connect(plot_, &QCustomPlot::mouseMove, this, &RunChart::on_mouse_move);
    readout_ = new QLabel(this);
    readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    readout_->setMinimumHeight(readout_->fontMetrics().height());
    layout->addWidget(plot_, 1);
    layout->addWidget(readout_);
}

void RunChart::set_runs(std::vector<ChartRun> runs) {
    runs_ = std::move(runs);
    plot_->legend->setVisible(runs_.size() > 1);
    refresh();
}

void RunChart::set_smoothing(double weight) {
    smoothing_ = std::clamp(weight, 0.0, 0.999);
    refresh();
}

void RunChart::set_log_y(bool on) {
    log_y_ = on;
    if (on) {
        plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
        plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    } else {
        plot_->yAxis->setScaleType(QCPAxis::stLinear);
        plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    }
    refresh();
}

void RunChart::set_x_axis(XAxis axis) {
    x_axis_ = axis;
    refresh();
}

RunChart::Curve& RunChart::curve(std::size_t run, const Series& s) const {
    if (curves_.size() < runs_.size()) curves_.resize(runs_.size());
    Curve& c = curves_[run];
    const RunSeries* owner = runs_[run].series;
    // Points were removed (rollback) or the settings changed: start over; else extend.
    if (c.owner != owner || c.removals != owner->removals() || c.weight != smoothing_ ||
        std::max({c.time.size(), c.smooth.size(), c.raw_index.size()}) > s.size()) {
        c = Curve{};
        c.owner = owner;
        c.removals = owner->removals();
        c.weight = smoothing_;
    }
    if (x_axis_ == XAxis::WallTime) {
        // Minutes since the first point; wall time can step back after a resume on another
        // clock, so x is kept non-decreasing for the decimation and the read-out.
        const double t0 = s.time.empty() ? 0 : s.time.front();
        for (std::size_t i = c.time.size(); i < s.size(); ++i) {
            double x = (s.time[i] - t0) / 60.0;
            if (i > 0) x = std::max(x, c.time[i - 1]);
            c.time.push_back(x);
        }
    }
    if (smoothing_ > 0) {
        // The same recurrence as ema_smooth, continued from where it stopped.
        const double w = std::clamp(smoothing_, 0.0, 0.999);
        for (std::size_t i = c.smooth.size(); i < s.size(); ++i) {
            const double y = s.value[i];
            if (!std::isfinite(y)) {
                c.smooth.push_back(y);
                continue;
            }
            c.ema_last = c.ema_last * w + (1 - w) * y;
            c.ema_debias = c.ema_debias * w + (1 - w);
            c.smooth.push_back(c.ema_last / c.ema_debias);
        }
        c.smooth_index.extend(c.smooth);
    }
    c.raw_index.extend(s.value);
    return c;
}

const std::vector<double>& RunChart::x_values(std::size_t run, const Series& s) const {
    switch (x_axis_) {
        case XAxis::Epoch:
            return s.epoch;
        case XAxis::WallTime:
            return curve(run, s).time;
        case XAxis::Step:
            break;
    }
    return s.step;
}

const Series* RunChart::series_of(std::size_t run) const {
    const Series* s = runs_[run].series ? runs_[run].series->find(metric_.toStdString()) : nullptr;
    return s && s->size() > 0 ? s : nullptr;
}

void RunChart::refresh() {
    plot_->clearGraphs();
    smoothed_graph_.assign(runs_.size(), -1);
    const int width = std::max(plot_->width(), 200);
    double x_min = 0, x_max = 0;
    bool any = false;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
        const Series* s = series_of(r);
        if (!s) continue;
        const auto& x = x_values(r, *s);
        x_min = any ? std::min(x_min, x.front()) : x.front();
        x_max = any ? std::max(x_max, x.back()) : x.back();
        any = true;
    }
    if (x_max <= x_min) x_max = x_min + 1;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
        const Series* s = series_of(r);
        if (!s) continue;
        const auto& x = x_values(r, *s);
        const QColor color = run_color(r);
        QCPGraph* raw = plot_->addGraph();
        const Curve& c = curve(r, *s);
        set_graph(raw, decimate_min_max(x, s->value, c.raw_index, x_min, x_max, width), log_y_);
        raw->setName(runs_[r].name);
        if (smoothing_ > 0) {
            QColor faint = color;
            faint.setAlpha(70);
            raw->setPen(QPen(faint));
            raw->removeFromLegend();
            QCPGraph* smooth = plot_->addGraph();
            set_graph(smooth, decimate_min_max(x, c.smooth, c.smooth_index, x_min, x_max, width),
                      log_y_);
            smooth->setPen(QPen(color, 1.6));
            smooth->setName(runs_[r].name);
            smoothed_graph_[r] = plot_->graphCount() - 1;
        } else {
            raw->setPen(QPen(color, 1.4));
            smoothed_graph_[r] = plot_->graphCount() - 1;
        }
    }
    plot_->xAxis->setLabel(x_axis_label(x_axis_));
    if (any) {
        plot_->rescaleAxes();
        if (!log_y_) {
            QCPRange y = plot_->yAxis->range();
            const double pad = std::max(y.size() * 0.05, 1e-9);
            plot_->yAxis->setRange(y.lower - pad, y.upper + pad);
        }
    }
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

int RunChart::drawn_points(int run) const {
    if (run < 0 || run >= static_cast<int>(smoothed_graph_.size())) return 0;
    int g = smoothed_graph_[static_cast<std::size_t>(run)];
    return g < 0 ? 0 : plot_->graph(g)->data()->size();
}

QString RunChart::readout_at(double x) const {
    QStringList parts;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
        const Series* s = series_of(r);
        if (!s) continue;
        const auto& xs = x_values(r, *s);
        auto it = std::lower_bound(xs.begin(), xs.end(), x);
        std::size_t i = static_cast<std::size_t>(it - xs.begin());
        if (i == xs.size()) i = xs.size() - 1;
        if (i > 0 && std::abs(xs[i - 1] - x) <= std::abs(xs[i] - x)) --i;
        QString text = QStringLiteral("%1: step %2, epoch %3 = %4")
                           .arg(runs_[r].name)
                           .arg(static_cast<long long>(s->step[i]))
                           .arg(static_cast<long long>(s->epoch[i]))
                           .arg(s->value[i], 0, 'g', 6);
        if (smoothing_ > 0)
            text += QStringLiteral(" (smoothed %1)").arg(curve(r, *s).smooth[i], 0, 'g', 6);
        parts << text;
    }
    return parts.join(QStringLiteral("   "));
}

QString RunChart::readout() const {
    return readout_->text();
}

void RunChart::on_mouse_move(QMouseEvent* event) {
    const double x = plot_->xAxis->pixelToCoord(event->position().x());
    readout_->setText(readout_at(x));
}

bool RunChart::export_png(const QString& file, int width, int height) {
    return plot_->savePng(file, width, height);
}

bool RunChart::export_csv(const QString& file) const {
    QFile f(file);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
    QTextStream out(&f);
    out << "run,metric,step,epoch,time,value,smoothed\n";
    for (const auto& run : runs_) {
        const Series* s = run.series ? run.series->find(metric_.toStdString()) : nullptr;
        if (!s) continue;
        const auto smooth = ema_smooth(s->value, smoothing_);
        const QString name = QString::fromStdString(store::csv_text_field(run.name.toStdString()));
        const QString metric = QString::fromStdString(store::csv_text_field(metric_.toStdString()));
        for (std::size_t i = 0; i < s->size(); ++i)
            out << name << ',' << metric << ',' << QString::number(s->step[i], 'g', 17) << ','
                << QString::number(s->epoch[i], 'g', 17) << ','
                << QString::number(s->time[i], 'f', 3) << ','
                << QString::number(s->value[i], 'g', 17) << ','
                << QString::number(smooth[i], 'g', 17) << '\n';
    }
    out.flush();
    return f.error() == QFile::NoError;
}

}  // namespace crucible::ui
