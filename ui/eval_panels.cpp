#include "ui/eval_panels.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "ui/plot_style.h"

namespace crucible::ui {

namespace {

QString metric_text(double v) {
    return std::isfinite(v) ? QString::number(v, 'f', 3) : QStringLiteral("—");
}

QString count_text(double v) {
    return std::isfinite(v) ? QString::number(static_cast<long long>(std::llround(v)))
                            : QStringLiteral("—");
}

// Sorts by number (missing values last when ascending is reversed: they sort as -1).
QStandardItem* number_item(double v, const QString& text) {
    auto* item = new QStandardItem(text);
    item->setData(std::isfinite(v) ? v : -1.0, Qt::UserRole);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setEditable(false);
    return item;
}

}  // namespace

PerClassTable::PerClassTable(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    source_ = new QLabel(this);
    model_ = new QStandardItemModel(0, kColumns, this);
    model_->setHorizontalHeaderLabels({tr("Class"), tr("Images"), tr("Instances"), tr("P"), tr("R"),
                                       tr("mAP50"), tr("mAP50-95")});
    model_->setSortRole(Qt::UserRole);
    view_ = new QTableView(this);
    view_->setObjectName(QStringLiteral("per_class"));
    view_->setModel(model_);
    view_->verticalHeader()->hide();
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view_->setAlternatingRowColors(true);
    // Rows stay in class order until a header is clicked.
    view_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
    view_->setSortingEnabled(true);
    view_->horizontalHeader()->setStretchLastSection(true);
    by_tag_ = new QPushButton(tr("Metrics by tag…"), this);
    by_tag_->setToolTip(
        tr("mAP for each production line, station or other image tag of the "
           "validation images"));
    auto* top = new QHBoxLayout;
    top->addWidget(source_, 1);
    top->addWidget(by_tag_);
    layout->addLayout(top);
    layout->addWidget(view_, 1);
    connect(by_tag_, &QPushButton::clicked, this, &PerClassTable::tag_breakdown_requested);
    connect(view_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const QStandardItem* name = model_->item(index.row(), kClass);
        if (name) emit class_activated(name->data(kClassRole).toInt());
    });
}

void PerClassTable::set_rows(const std::vector<ClassMetricsRow>& rows, const QString& source) {
    model_->removeRows(0, model_->rowCount());
    for (const auto& r : rows) {
        auto* name = new QStandardItem(r.name);
        name->setData(r.name.toLower(), Qt::UserRole);
        name->setToolTip(tr("class %1 · double-click for its images").arg(r.cls));
        name->setData(r.cls, kClassRole);
        name->setEditable(false);
        model_->appendRow({name, number_item(r.images, count_text(r.images)),
                           number_item(r.instances, count_text(r.instances)),
                           number_item(r.p, metric_text(r.p)), number_item(r.r, metric_text(r.r)),
                           number_item(r.map50, metric_text(r.map50)),
                           number_item(r.map50_95, metric_text(r.map50_95))});
    }
    const QHeaderView* header = view_->horizontalHeader();
    if (header->sortIndicatorSection() >= 0 && header->sortIndicatorSection() < kColumns)
        model_->sort(header->sortIndicatorSection(), header->sortIndicatorOrder());
    source_->setText(tr("%1 classes · %2").arg(rows.size()).arg(source));
}

int PerClassTable::row_count() const {
    return model_->rowCount();
}

QString PerClassTable::text(int row, int column) const {
    const QStandardItem* item = model_->item(row, column);
    return item ? item->text() : QString();
}

void PerClassTable::sort_by(int column, Qt::SortOrder order) {
    view_->sortByColumn(column, order);
}

QString PerClassTable::source() const {
    return source_->text();
}

ConfusionMatrixPanel::ConfusionMatrixPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    normalize_ = new QCheckBox(tr("Normalize (each true class sums to 1)"), this);
    normalize_->setObjectName(QStringLiteral("normalize"));
    caption_ = new QLabel(this);
    top->addWidget(normalize_);
    top->addStretch(1);
    top->addWidget(caption_);
    layout->addLayout(top);
    plot_ = new QCustomPlot(this);
    plot_->setMinimumSize(360, 320);
    map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
    map_->setInterpolate(false);
    map_->setTightBoundary(false);
    auto* scale = new QCPColorScale(plot_);
    plot_->plotLayout()->addElement(0, 1, scale);
    map_->setColorScale(scale);
    follow_palette(plot_);
    QCPColorGradient blues;
    blues.setColorStopAt(0, QColor(247, 251, 255));
    blues.setColorStopAt(0.5, QColor(107, 174, 214));
    blues.setColorStopAt(1, QColor(8, 48, 107));
    map_->setGradient(blues);
    plot_->xAxis->setLabel(tr("True"));
    plot_->yAxis->setLabel(tr("Predicted"));
    plot_->yAxis->setRangeReversed(true);  // the first class at the top, as the reference
    layout->addWidget(plot_, 1);
    connect(normalize_, &QCheckBox::toggled, this, [this] { redraw(); });
    connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        const int n = data_.size();
        const int truth = static_cast<int>(std::lround(plot_->xAxis->pixelToCoord(e->pos().x())));
        const int predicted =
            static_cast<int>(std::lround(plot_->yAxis->pixelToCoord(e->pos().y())));
        if (truth >= 0 && truth < n && predicted >= 0 && predicted < n)
            emit cell_clicked(predicted, truth);
    });
    plot_->setToolTip(tr("Click a cell to see its images"));
}

QPoint ConfusionMatrixPanel::cell_position(int predicted, int truth) const {
    return QPoint(static_cast<int>(plot_->xAxis->coordToPixel(truth)),
                  static_cast<int>(plot_->yAxis->coordToPixel(predicted)));
}

void ConfusionMatrixPanel::set_data(const ConfusionData& data) {
    data_ = data;
    redraw();
}

void ConfusionMatrixPanel::set_normalized(bool on) {
    normalize_->setChecked(on);  // redraws through toggled when it changes
}

bool ConfusionMatrixPanel::normalized() const {
    return normalize_->isChecked();
}

double ConfusionMatrixPanel::value(int predicted, int truth) const {
    const int n = data_.size();
    if (predicted < 0 || truth < 0 || predicted >= n || truth >= n) return 0;
    const auto p = static_cast<std::size_t>(predicted), t = static_cast<std::size_t>(truth);
    return normalized() ? data_.normalized()[p][t] : data_.counts[p][t];  // as redraw() shows it
}

double ConfusionMatrixPanel::painted_value(int predicted, int truth) const {
    return map_->data()->cell(truth, predicted);
}

QString ConfusionMatrixPanel::axis_label(int index) const {
    auto ticker = plot_->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    return ticker ? ticker->ticks().value(index) : QString();
}

void ConfusionMatrixPanel::redraw() {
    const int n = data_.size();
    plot_->clearItems();
    map_->data()->setSize(std::max(n, 1), std::max(n, 1));
    map_->data()->setRange(QCPRange(0, std::max(n - 1, 0)), QCPRange(0, std::max(n - 1, 0)));
    const auto shown = normalized() ? data_.normalized() : data_.counts;
    double most = 0;
    for (int p = 0; p < n; ++p)
        for (int t = 0; t < n; ++t) {
            const double v = shown[static_cast<std::size_t>(p)][static_cast<std::size_t>(t)];
            map_->data()->setCell(t, p, std::isfinite(v) ? v : 0.0);
            if (std::isfinite(v)) most = std::max(most, v);
        }
    map_->setDataRange(QCPRange(0, normalized() ? 1.0 : std::max(most, 1.0)));
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int i = 0; i < n; ++i)
        ticker->addTick(i, data_.names[i]);
    plot_->xAxis->setTicker(ticker);
    plot_->yAxis->setTicker(ticker);
    plot_->xAxis->setTickLabelRotation(n > 6 ? 45 : 0);
    plot_->xAxis->setRange(-0.5, n - 0.5);
    plot_->yAxis->setRange(-0.5, n - 0.5);
    // Numbers in the cells while they still fit.
    if (n <= 20) {
        for (int p = 0; p < n; ++p)
            for (int t = 0; t < n; ++t) {
                const double v = shown[static_cast<std::size_t>(p)][static_cast<std::size_t>(t)];
                if (!std::isfinite(v) || v == 0) continue;
                auto* label = new QCPItemText(plot_);
                label->position->setCoords(t, p);
                label->setText(normalized() ? QString::number(v, 'f', 2) : count_text(v));
                const double level = normalized() ? v : v / std::max(most, 1.0);
                label->setColor(level > 0.5 ? Qt::white : Qt::black);
            }
    }
    caption_->setText(tr("confidence ≥ %1 · IoU ≥ %2").arg(data_.conf).arg(data_.iou));
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

PrCurvePanel::PrCurvePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    plot_ = new QCustomPlot(this);
    plot_->setMinimumSize(360, 300);
    plot_->xAxis->setLabel(tr("Recall"));
    plot_->yAxis->setLabel(tr("Precision"));
    plot_->xAxis->setRange(0, 1);
    plot_->yAxis->setRange(0, 1.02);
    plot_->legend->setVisible(true);
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignLeft);
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    follow_palette(plot_);
    layout->addWidget(plot_, 1);
    connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        const int graph = curve_near(e->pos(), 12);
        if (graph < 0) return;
        const double recall = std::clamp(plot_->xAxis->pixelToCoord(e->pos().x()), 0.0, 1.0);
        emit point_clicked(curves_.classes[static_cast<std::size_t>(graph)].cls, recall);
    });
    plot_->setToolTip(tr("Click a class's curve to see the images behind that point"));
}

double PrCurvePanel::precision_at(int graph, double recall) const {
    const auto& precision = curves_.classes[static_cast<std::size_t>(graph)].precision;
    const auto& grid = curves_.recall;
    if (grid.empty() || precision.size() != grid.size()) return std::nan("");
    const auto it = std::lower_bound(grid.begin(), grid.end(), recall);
    const auto i = static_cast<std::size_t>(
        std::min<std::ptrdiff_t>(it - grid.begin(), static_cast<std::ptrdiff_t>(grid.size()) - 1));
    return precision[i];
}

int PrCurvePanel::curve_near(const QPoint& pixel, int reach) const {
    const double recall = plot_->xAxis->pixelToCoord(pixel.x());
    if (recall < -0.01 || recall > 1.01) return -1;
    int best = -1;
    double nearest = reach + 0.5;
    for (int g = 0; g < static_cast<int>(curves_.classes.size()); ++g) {
        const double p = precision_at(g, std::clamp(recall, 0.0, 1.0));
        if (!std::isfinite(p)) continue;
        const double distance = std::abs(plot_->yAxis->coordToPixel(p) - pixel.y());
        if (distance < nearest) {
            nearest = distance;
            best = g;
        }
    }
    return best;
}

QPoint PrCurvePanel::point_position(int graph, double recall) const {
    return QPoint(
        static_cast<int>(std::lround(plot_->xAxis->coordToPixel(recall))),
        static_cast<int>(std::lround(plot_->yAxis->coordToPixel(precision_at(graph, recall)))));
}

void PrCurvePanel::set_curves(const PrCurves& curves, const std::vector<ClassMetricsRow>& rows) {
    curves_ = curves;
    plot_->clearGraphs();
    std::map<int, double> map50;
    for (const auto& r : rows)
        map50[r.cls] = r.map50;
    const QVector<double> x(curves.recall.begin(), curves.recall.end());
    const int count = static_cast<int>(curves.classes.size());
    // Many classes: every curve is drawn, the legend names only the mean.
    const bool legend_all = count <= 10;
    double mean_ap = 0;
    int with_ap = 0;
    for (int i = 0; i < count; ++i) {
        const auto& c = curves.classes[static_cast<std::size_t>(i)];
        const auto it = map50.find(c.cls);
        const double ap = it != map50.end() ? it->second : curve_area(curves.recall, c.precision);
        if (std::isfinite(ap)) {
            mean_ap += ap;
            ++with_ap;
        }
        QCPGraph* g = plot_->addGraph();
        g->setData(x, QVector<double>(c.precision.begin(), c.precision.end()), true);
        g->setName(QStringLiteral("%1 %2").arg(c.name, metric_text(ap)));
        g->setPen(QPen(QColor::fromHsv((i * 360 / std::max(count, 1)) % 360, 160, 200), 1));
        if (!legend_all) g->removeFromLegend();
    }
    const auto mean = curves.mean_precision();
    const double all =
        with_ap > 0 && !rows.empty() ? mean_ap / with_ap : curve_area(curves.recall, mean);
    QCPGraph* g = plot_->addGraph();
    g->setData(x, QVector<double>(mean.begin(), mean.end()), true);
    g->setName(tr("all classes %1 mAP@0.5").arg(metric_text(all)));
    g->setPen(QPen(QColor(20, 90, 200), 3));
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

int PrCurvePanel::graph_count() const {
    return plot_->graphCount();
}

QString PrCurvePanel::graph_name(int graph) const {
    return graph >= 0 && graph < plot_->graphCount() ? plot_->graph(graph)->name() : QString();
}

}  // namespace crucible::ui
