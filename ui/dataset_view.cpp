#include "ui/dataset_view.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListView>
#include <QPixmap>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "core/base/file_io.h"
#include "ui/thumbnail_cache.h"

namespace crucible::ui {

namespace {
QString file_of(const DatasetImage& img) {
    return QString::fromStdString(path_to_utf8(img.path));
}
}  // namespace

DatasetModel::DatasetModel(ThumbnailCache* cache, QObject* parent)
    : QAbstractListModel(parent), cache_(cache) {
    connect(cache_, &ThumbnailCache::ready, this, &DatasetModel::on_ready);
}

void DatasetModel::set_content(std::shared_ptr<DatasetContent> content) {
    content_ = std::move(content);
    refilter();
}

void DatasetModel::set_filter(int cls, const QString& split) {
    cls_ = cls;
    split_ = split;
    refilter();
}

void DatasetModel::refilter() {
    beginResetModel();
    rows_.clear();
    row_of_.clear();
    cache_->cancel_pending();
    if (content_) {
        for (std::size_t i = 0; i < content_->images.size(); ++i) {
            const auto& img = content_->images[i];
            if (!split_.isEmpty() && QString::fromStdString(img.split) != split_) continue;
            if (cls_ >= 0 && std::none_of(img.boxes.begin(), img.boxes.end(),
                                          [&](const data::Box& b) { return b.cls == cls_; }))
                continue;
            row_of_.insert(file_of(img), static_cast<int>(rows_.size()));
            rows_.push_back(static_cast<int>(i));
        }
    }
    endResetModel();
}

int DatasetModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DatasetModel::image_index(int row) const {
    return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[static_cast<std::size_t>(row)]
                                                            : -1;
}

QVariant DatasetModel::data(const QModelIndex& index, int role) const {
    const int i = image_index(index.row());
    if (i < 0 || !content_) return {};
    const auto& img = content_->images[static_cast<std::size_t>(i)];
    switch (role) {
        case Qt::DisplayRole:
            return QString::fromStdString(path_to_utf8(img.path.filename()));
        case Qt::DecorationRole: {
            // Asking the cache queues the decode; only visible rows are asked (the view asks
            // for what it paints), so a 10,000-image dataset decodes as it scrolls.
            QImage thumb = cache_->request(file_of(img));
            if (thumb.isNull()) {
                QPixmap placeholder(cache_->size());
                placeholder.fill(QColor(128, 128, 128, 60));
                return placeholder;
            }
            return QPixmap::fromImage(thumb);
        }
        case Qt::ToolTipRole:
            return QStringLiteral("%1\n%2 · %3 boxes")
                .arg(file_of(img), QString::fromStdString(img.split))
                .arg(img.boxes.size());
        default:
            return {};
    }
}

void DatasetModel::on_ready(const QString& file) {
    auto it = row_of_.find(file);
    if (it == row_of_.end()) return;
    QModelIndex idx = index(*it);
    emit dataChanged(idx, idx, {Qt::DecorationRole});
}

DatasetView::DatasetView(std::shared_ptr<DatasetContent> content, const QString& name,
                         QWidget* parent)
    : QWidget(parent), content_(std::move(content)) {
    cache_ = new ThumbnailCache(QSize(160, 120), 256ll << 20, this);
    model_ = new DatasetModel(cache_, this);
    auto* outer = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    class_filter_ = new QComboBox(this);
    split_filter_ = new QComboBox(this);
    count_ = new QLabel(this);
    bar->addWidget(new QLabel(QStringLiteral("<b>%1</b>").arg(name.toHtmlEscaped()), this));
    bar->addSpacing(16);
    bar->addWidget(new QLabel(tr("Class"), this));
    bar->addWidget(class_filter_);
    bar->addWidget(new QLabel(tr("Split"), this));
    bar->addWidget(split_filter_);
    bar->addStretch(1);
    bar->addWidget(count_);
    outer->addLayout(bar);

    auto* split = new QSplitter(Qt::Horizontal, this);
    grid_ = new QListView(split);
    grid_->setViewMode(QListView::IconMode);
    grid_->setResizeMode(QListView::Adjust);
    grid_->setUniformItemSizes(true);
    grid_->setLayoutMode(QListView::Batched);
    grid_->setBatchSize(200);
    grid_->setMovement(QListView::Static);
    grid_->setIconSize(cache_->size());
    grid_->setGridSize(cache_->size() + QSize(16, 28));
    grid_->setModel(model_);
    stats_ = new QCustomPlot(split);
    stats_->setMinimumWidth(220);
    stats_->setMaximumWidth(360);
    split->addWidget(grid_);
    split->addWidget(stats_);
    split->setStretchFactor(0, 1);
    outer->addWidget(split, 1);

    class_filter_->addItem(tr("all classes"), -1);
    for (std::size_t c = 0; c < content_->class_names.size(); ++c)
        class_filter_->addItem(QString::fromStdString(content_->class_names[c]),
                               static_cast<int>(c));
    std::set<std::string> splits;
    for (const auto& img : content_->images)
        splits.insert(img.split);
    split_filter_->addItem(tr("all splits"), QString());
    for (const auto& s : splits)
        split_filter_->addItem(QString::fromStdString(s), QString::fromStdString(s));
    auto apply = [this] {
        model_->set_filter(class_filter_->currentData().toInt(),
                           split_filter_->currentData().toString());
        count_->setText(tr("%1 of %2 images").arg(model_->rowCount()).arg(content_->images.size()));
    };
    connect(class_filter_, &QComboBox::currentIndexChanged, this, apply);
    connect(split_filter_, &QComboBox::currentIndexChanged, this, apply);
    connect(grid_, &QListView::activated, this, [this](const QModelIndex& index) {
        int i = model_->image_index(index.row());
        if (i >= 0) emit open_image(i);
    });
    model_->set_content(content_);
    apply();
    update_stats();
}

void DatasetView::set_filter(int cls, const QString& split) {
    class_filter_->setCurrentIndex(std::max(0, class_filter_->findData(cls)));
    split_filter_->setCurrentIndex(std::max(0, split_filter_->findData(split)));
}

void DatasetView::content_changed() {
    model_->refilter();
    count_->setText(tr("%1 of %2 images").arg(model_->rowCount()).arg(content_->images.size()));
    update_stats();
}

void DatasetView::update_stats() {
    stats_->clearPlottables();
    const auto n = content_->class_names.size();
    QVector<double> ticks, counts;
    QVector<QString> labels;
    std::vector<double> per_class(n, 0);
    for (const auto& img : content_->images)
        for (const auto& b : img.boxes)
            if (b.cls >= 0 && static_cast<std::size_t>(b.cls) < n)
                per_class[static_cast<std::size_t>(b.cls)] += 1;
    for (std::size_t c = 0; c < n; ++c) {
        ticks << static_cast<double>(c);
        counts << per_class[c];
        labels << QString::fromStdString(content_->class_names[c]);
    }
    auto* bars = new QCPBars(stats_->yAxis, stats_->xAxis);  // horizontal bars
    bars->setData(ticks, counts);
    bars->setBrush(QColor(42, 130, 218, 160));
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    ticker->addTicks(ticks, labels);
    stats_->yAxis->setTicker(ticker);
    stats_->xAxis->setLabel(tr("instances per class"));
    stats_->rescaleAxes();
    stats_->yAxis->setRange(-0.7, std::max<double>(static_cast<double>(n) - 0.3, 0.3));
    double most = 1;
    for (double v : per_class)
        most = std::max(most, v);
    stats_->xAxis->setRange(0, most * 1.1);
    stats_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace crucible::ui
