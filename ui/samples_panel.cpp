#include "ui/samples_panel.h"

#include <QIcon>
#include <QListWidget>
#include <QPixmap>
#include <QVBoxLayout>

namespace crucible::ui {

namespace {
constexpr int kThumb = 256;  // pixels of a sample picture's long side in the list
}

SamplesPanel::SamplesPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("samples"));
    list_->setIconSize(QSize(kThumb, kThumb));
    list_->setWordWrap(true);
    list_->setSelectionMode(QAbstractItemView::SingleSelection);
    list_->setTextElideMode(Qt::ElideNone);
    layout->addWidget(list_);
}

void SamplesPanel::add(SampleEntry entry) {
    entries_.push_back(std::move(entry));
    rebuild();
}

void SamplesPanel::set_image(const QString& image, const QImage& picture, const QString& problem) {
    for (auto& e : entries_) {
        if (e.image != image) continue;
        e.picture = picture.isNull() ? QImage()
                                     : picture.scaled(kThumb, kThumb, Qt::KeepAspectRatio,
                                                      Qt::SmoothTransformation);
        if (picture.isNull() && !problem.isEmpty()) e.text = problem;
    }
    rebuild();
}

void SamplesPanel::drop_after(const QString& run, std::int64_t step) {
    const auto superseded = [&](const SampleEntry& e) { return e.run == run && e.step > step; };
    const auto removed = std::erase_if(entries_, superseded);
    if (removed > 0) rebuild();
}

void SamplesPanel::rebuild() {
    list_->clear();
    // Newest first: the latest generation is what a person looks for.
    for (std::size_t k = entries_.size(); k-- > 0;) {
        const SampleEntry& e = entries_[k];
        QString title = tr("step %1").arg(static_cast<long long>(e.step));
        if (!e.run.isEmpty()) title = e.run + QStringLiteral(" · ") + title;
        QString text = title + QStringLiteral(" · ") + e.prompt;
        if (!e.text.isEmpty()) text += QStringLiteral("\n") + e.text;
        if (!e.image.isEmpty() && !e.image_loaded() && e.text.isEmpty())
            text += QStringLiteral("\n") + tr("(loading %1…)").arg(e.image);
        auto* item = new QListWidgetItem(text, list_);
        if (e.image_loaded()) item->setIcon(QIcon(QPixmap::fromImage(e.picture)));
    }
}

}  // namespace crucible::ui
