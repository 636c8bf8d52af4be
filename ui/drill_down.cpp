#include "ui/drill_down.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/base/file_io.h"

namespace crucible::ui {

namespace {

constexpr int kIndexRole = Qt::UserRole + 1;  // the image's index in the report

QString class_name(const std::vector<std::string>& names, int cls) {
    if (cls == static_cast<int>(names.size())) return QObject::tr("background");
    return cls >= 0 && cls < static_cast<int>(names.size())
               ? QString::fromStdString(names[static_cast<std::size_t>(cls)])
               : QString::number(cls);
}

// A cell that sorts by `value` and shows `text`.
QTableWidgetItem* number_cell(double value, const QString& text) {
    auto* item = new QTableWidgetItem;
    item->setData(Qt::DisplayRole, value);
    item->setData(Qt::ToolTipRole, text);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

bool DrillFilter::matches(const data::ImageOutcome& image) const {
    if (cell && !image.counts_in(cell->first, cell->second)) return false;
    if (cls && !recall && !image.involves_class(*cls)) return false;
    if (!tag.isEmpty()) {
        const auto eq = tag.indexOf(QLatin1Char('='));
        const std::string key = tag.left(eq).trimmed().toStdString();
        const auto it = image.tags.find(key);
        if (it == image.tags.end()) return false;
        if (eq >= 0 && QString::fromStdString(it->second) != tag.mid(eq + 1).trimmed())
            return false;
    }
    return true;
}

QString DrillFilter::describe(const std::vector<std::string>& names) const {
    QStringList parts;
    if (cell)
        parts << QObject::tr("predicted %1, true %2")
                     .arg(class_name(names, cell->first), class_name(names, cell->second));
    if (cls && recall)
        parts << QObject::tr("class %1 at recall %2")
                     .arg(class_name(names, *cls))
                     .arg(QString::number(*recall, 'f', 2));
    else if (cls)
        parts << QObject::tr("class %1").arg(class_name(names, *cls));
    if (!tag.isEmpty()) parts << tag;
    return parts.isEmpty() ? QObject::tr("every image") : parts.join(QStringLiteral(" · "));
}

DrillDownView::DrillDownView(data::PerImageReport report, DrillFilter filter, QWidget* parent)
    : QWidget(parent), report_(std::move(report)), filter_(std::move(filter)) {
    if (filter_.cls && filter_.recall)
        point_ = data::operating_point_at_recall(report_, *filter_.cls, *filter_.recall);
    caption_ = new QLabel(this);
    caption_->setWordWrap(true);
    tag_ = new QLineEdit(filter_.tag, this);
    tag_->setPlaceholderText(tr("tag, e.g. station=3"));
    tag_->setClearButtonEnabled(true);
    table_ = new QTableWidget(this);
    table_->setColumnCount(kColumns);
    table_->setHorizontalHeaderLabels({tr("Image"), tr("False positives"), tr("Misses"),
                                       tr("Mean IoU"), tr("True positives"), tr("Tags")});
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setSortingEnabled(true);
    auto* top = new QHBoxLayout;
    top->addWidget(caption_, 1);
    top->addWidget(new QLabel(tr("Tag"), this));
    top->addWidget(tag_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(table_, 1);
    layout->addWidget(new QLabel(tr("Double-click an image to open it with its labels and the "
                                    "model's predictions (dashed)"),
                                 this));
    connect(tag_, &QLineEdit::textChanged, this, [this](const QString& t) { set_tag_filter(t); });
    connect(table_, &QTableWidget::cellDoubleClicked, this,
            [this](int row, int) { emit open_image(image_at(row), shown_conf()); });
    refill();
}

void DrillDownView::refill() {
    table_->setSortingEnabled(false);
    table_->setRowCount(0);
    int shown = 0;
    for (std::size_t i = 0; i < report_.images.size(); ++i) {
        const auto& im = report_.images[i];
        if (!filter_.matches(im)) continue;
        // At a PR point: the class's own counts at its threshold; the images without any left out.
        data::ClassCounts counts{im.true_positives, im.false_positives, im.misses};
        if (point_) {
            counts = data::class_counts(im, point_->cls, point_->conf);
            if (counts.found() + counts.misses == 0) continue;
        }
        const int row = table_->rowCount();
        table_->insertRow(row);
        auto* name = new QTableWidgetItem(QString::fromStdString(path_to_utf8(im.path.filename())));
        name->setToolTip(QString::fromStdString(path_to_utf8(im.path)));
        name->setData(kIndexRole, static_cast<int>(i));
        table_->setItem(row, kImage, name);
        table_->setItem(
            row, kFalsePositives,
            number_cell(counts.false_positives, QString::number(counts.false_positives)));
        table_->setItem(row, kMisses, number_cell(counts.misses, QString::number(counts.misses)));
        table_->setItem(row, kMeanIou, number_cell(im.mean_iou, QString::number(im.mean_iou)));
        table_->setItem(row, kTruePositives,
                        number_cell(counts.true_positives, QString::number(counts.true_positives)));
        QStringList tags;
        for (const auto& [k, v] : im.tags)
            tags << QString::fromStdString(k + "=" + v);
        table_->setItem(row, kTags, new QTableWidgetItem(tags.join(QStringLiteral(", "))));
        ++shown;
    }
    table_->setSortingEnabled(true);
    // The worst first: most false positives, then most misses (a stable sort keeps the first).
    table_->sortItems(kMisses, Qt::DescendingOrder);
    table_->sortItems(kFalsePositives, Qt::DescendingOrder);
    if (point_) {
        caption_->setText(tr("%1: confidence ≥ %2 gives precision %3, recall %4 (%5 true "
                             "positives, %6 false positives, %7 misses at IoU 0.5) · %8 of %9 "
                             "images")
                              .arg(filter_.describe(report_.names))
                              .arg(QString::number(point_->conf, 'g', 3))
                              .arg(QString::number(point_->precision(), 'f', 3))
                              .arg(QString::number(point_->recall(), 'f', 3))
                              .arg(point_->counts.true_positives)
                              .arg(point_->counts.false_positives)
                              .arg(point_->counts.misses)
                              .arg(shown)
                              .arg(report_.images.size()));
        return;
    }
    caption_->setText(tr("%1: %2 of %3 images · conf %4, IoU %5")
                          .arg(filter_.describe(report_.names))
                          .arg(shown)
                          .arg(report_.images.size())
                          .arg(report_.conf)
                          .arg(report_.iou));
}

int DrillDownView::row_count() const {
    return table_->rowCount();
}

const data::ImageOutcome& DrillDownView::image_at(int row) const {
    return report_.images.at(
        static_cast<std::size_t>(table_->item(row, kImage)->data(kIndexRole).toInt()));
}

void DrillDownView::set_tag_filter(const QString& key_value) {
    filter_.tag = key_value.trimmed();
    if (tag_->text() != key_value) {
        QSignalBlocker block(tag_);
        tag_->setText(key_value);
    }
    refill();
}

void DrillDownView::sort_by(int column, Qt::SortOrder order) {
    table_->sortItems(column, order);
}

TagMetricsView::TagMetricsView(data::PerImageReport report, QWidget* parent)
    : QWidget(parent), report_(std::move(report)) {
    key_ = new QComboBox(this);
    for (const auto& [key, values] : report_.by_tag)
        key_->addItem(QString::fromStdString(key));
    caption_ = new QLabel(this);
    caption_->setWordWrap(true);
    table_ = new QTableWidget(this);
    table_->setColumnCount(kColumns);
    table_->setHorizontalHeaderLabels({tr("Value"), tr("Images"), tr("Instances"), tr("P"), tr("R"),
                                       tr("mAP50"), tr("mAP50-95")});
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Tag"), this));
    top->addWidget(key_);
    top->addWidget(caption_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(table_, 1);
    layout->addWidget(
        new QLabel(tr("Double-click a value to list its images, the worst first"), this));
    connect(key_, &QComboBox::currentTextChanged, this, &TagMetricsView::show_key);
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        emit tag_activated(key_->currentText() + QLatin1Char('=') + value_at(row));
    });
    if (report_.by_tag.empty())
        caption_->setText(
            tr("No validation image of this run has a tag. Tag images in the "
               "dataset (e.g. station=3) and drill down again."));
    else
        show_key(key_->currentText());
}

QStringList TagMetricsView::keys() const {
    QStringList out;
    for (int i = 0; i < key_->count(); ++i)
        out << key_->itemText(i);
    return out;
}

void TagMetricsView::show_key(const QString& key) {
    if (key_->currentText() != key) {
        key_->setCurrentText(key);  // calls back here
        return;
    }
    table_->setSortingEnabled(false);
    table_->setRowCount(0);
    const auto it = report_.by_tag.find(key.toStdString());
    if (it == report_.by_tag.end()) return;
    for (const auto& [value, m] : it->second) {
        const int row = table_->rowCount();
        table_->insertRow(row);
        table_->setItem(row, kValue, new QTableWidgetItem(QString::fromStdString(value)));
        table_->setItem(row, kImages, number_cell(m.images, QString::number(m.images)));
        table_->setItem(row, kInstances, number_cell(m.instances, QString::number(m.instances)));
        const double shown[] = {m.p, m.r, m.map50, m.map50_95};
        for (int c = 0; c < 4; ++c)
            table_->setItem(row, kP + c, number_cell(shown[c], QString::number(shown[c], 'f', 4)));
    }
    table_->setSortingEnabled(true);
    table_->sortItems(kMap50, Qt::AscendingOrder);  // the weakest value first
    caption_->setText(tr("%1 values of %2, from the run's best weights on its validation images")
                          .arg(it->second.size())
                          .arg(key));
}

int TagMetricsView::row_count() const {
    return table_->rowCount();
}

QString TagMetricsView::value_at(int row) const {
    return table_->item(row, kValue)->text();
}

const data::TagMetrics& TagMetricsView::metrics_at(int row) const {
    return report_.by_tag.at(key_->currentText().toStdString()).at(value_at(row).toStdString());
}

}  // namespace crucible::ui
