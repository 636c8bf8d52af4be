#include "ui/drill_down.h"

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
    if (cls && !image.involves_class(*cls)) return false;
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
    if (cls) parts << QObject::tr("class %1").arg(class_name(names, *cls));
    if (!tag.isEmpty()) parts << tag;
    return parts.isEmpty() ? QObject::tr("every image") : parts.join(QStringLiteral(" · "));
}

DrillDownView::DrillDownView(data::PerImageReport report, DrillFilter filter, QWidget* parent)
    : QWidget(parent), report_(std::move(report)), filter_(std::move(filter)) {
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
            [this](int row, int) { emit open_image(image_at(row), report_.conf); });
    refill();
}

void DrillDownView::refill() {
    table_->setSortingEnabled(false);
    table_->setRowCount(0);
    int shown = 0;
    for (std::size_t i = 0; i < report_.images.size(); ++i) {
        const auto& im = report_.images[i];
        if (!filter_.matches(im)) continue;
        const int row = table_->rowCount();
        table_->insertRow(row);
        auto* name = new QTableWidgetItem(QString::fromStdString(path_to_utf8(im.path.filename())));
        name->setToolTip(QString::fromStdString(path_to_utf8(im.path)));
        name->setData(kIndexRole, static_cast<int>(i));
        table_->setItem(row, kImage, name);
        table_->setItem(row, kFalsePositives,
                        number_cell(im.false_positives, QString::number(im.false_positives)));
        table_->setItem(row, kMisses, number_cell(im.misses, QString::number(im.misses)));
        table_->setItem(row, kMeanIou, number_cell(im.mean_iou, QString::number(im.mean_iou)));
        table_->setItem(row, kTruePositives,
                        number_cell(im.true_positives, QString::number(im.true_positives)));
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

}  // namespace crucible::ui
