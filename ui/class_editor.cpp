#include "ui/class_editor.h"

#include <QColorDialog>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QListWidget>
#include <QPixmap>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "ui/class_colors.h"

namespace crucible::ui {

ClassEditor::ClassEditor(store::Project& project, std::int64_t dataset_id, QWidget* parent)
    : QDialog(parent), project_(project), dataset_id_(dataset_id) {
    setWindowTitle(tr("Classes of %1")
                       .arg(QString::fromStdString(store::get_dataset(project, dataset_id).name)));
    list_ = new QListWidget(this);
    list_->setIconSize(QSize(14, 14));
    auto* add = new QPushButton(tr("Add…"), this);
    auto* rename = new QPushButton(tr("Rename…"), this);
    auto* merge = new QPushButton(tr("Merge into…"), this);
    merge->setToolTip(tr("Give this class's boxes to another class and remove it"));
    auto* color = new QPushButton(tr("Colour…"), this);
    auto* buttons = new QVBoxLayout;
    for (QPushButton* b : {add, rename, merge, color})
        buttons->addWidget(b);
    buttons->addStretch(1);
    auto* row = new QHBoxLayout;
    row->addWidget(list_, 1);
    row->addLayout(buttons);
    auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row, 1);
    layout->addWidget(close);
    connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(add, &QPushButton::clicked, this, &ClassEditor::ask_add);
    connect(rename, &QPushButton::clicked, this, &ClassEditor::ask_rename);
    connect(list_, &QListWidget::itemActivated, this, &ClassEditor::ask_rename);
    connect(merge, &QPushButton::clicked, this, &ClassEditor::ask_merge);
    connect(color, &QPushButton::clicked, this, &ClassEditor::ask_color);
    resize(460, 380);
    reload();
}

void ClassEditor::reload() {
    const int current = list_->currentRow();
    list_->clear();
    const auto names = store::dataset_class_names(project_, dataset_id_);
    const auto colors = store::class_colors(project_, dataset_id_);
    const auto counts = store::class_box_counts(project_, dataset_id_);
    for (std::size_t i = 0; i < names.size(); ++i) {
        QPixmap swatch(14, 14);
        swatch.fill(class_color(static_cast<int>(i), colors));
        const QString key = i < 9 ? tr("key %1").arg(i + 1) : tr("no key");
        const QString name = QString::fromStdString(names[i]);
        auto* item = new QListWidgetItem(
            QIcon(swatch),
            tr("%1 · %2 boxes · %3").arg(name).arg(i < counts.size() ? counts[i] : 0).arg(key));
        item->setData(Qt::UserRole, name);
        list_->addItem(item);
    }
    list_->setCurrentRow(std::min(current, list_->count() - 1));
}

bool ClassEditor::apply(const std::function<void()>& edit) {
    try {
        edit();
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
        return false;
    }
    reload();
    emit changed();
    return true;
}

bool ClassEditor::add_class(const QString& name) {
    return apply([&] { store::add_class(project_, dataset_id_, name.trimmed().toStdString()); });
}

bool ClassEditor::rename_class(int index, const QString& name) {
    return apply(
        [&] { store::rename_class(project_, dataset_id_, index, name.trimmed().toStdString()); });
}

bool ClassEditor::merge_class(int from, int into) {
    return apply([&] { store::merge_class(project_, dataset_id_, from, into); });
}

bool ClassEditor::set_color(int index, const QColor& color) {
    return apply([&] {
        store::set_class_color(project_, dataset_id_, index,
                               color.isValid() ? color.name().toStdString() : std::string());
    });
}

void ClassEditor::ask_add() {
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Add class"), tr("Name of the new class:"),
                                               QLineEdit::Normal, QString(), &ok);
    if (ok) add_class(name);
}

namespace {
QString name_of(const QListWidgetItem* item) {
    return item->data(Qt::UserRole).toString();
}
}  // namespace

void ClassEditor::ask_rename() {
    const int row = list_->currentRow();
    if (row < 0) return;
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Rename class"), tr("New name:"),
                                               QLineEdit::Normal, name_of(list_->item(row)), &ok);
    if (ok) rename_class(row, name);
}

void ClassEditor::ask_merge() {
    const int row = list_->currentRow();
    if (row < 0 || list_->count() < 2) return;
    QStringList others;
    std::vector<int> indexes;
    for (int i = 0; i < list_->count(); ++i)
        if (i != row) {
            others << name_of(list_->item(i));
            indexes.push_back(i);
        }
    bool ok = false;
    const QString into = QInputDialog::getItem(
        this, tr("Merge class"),
        tr("Give the boxes of %1 to (%1 is then removed):").arg(name_of(list_->item(row))), others,
        0, false, &ok);
    if (!ok) return;
    merge_class(row, indexes[static_cast<std::size_t>(others.indexOf(into))]);
}

void ClassEditor::ask_color() {
    const int row = list_->currentRow();
    if (row < 0) return;
    const QColor chosen = QColorDialog::getColor(
        class_color(row, store::class_colors(project_, dataset_id_)), this, tr("Class colour"));
    if (chosen.isValid()) set_color(row, chosen);
}

}  // namespace crucible::ui
