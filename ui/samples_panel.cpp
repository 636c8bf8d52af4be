#include "ui/samples_panel.h"

#include <QIcon>
#include <QListWidget>
#include <QPixmap>
#include <QVBoxLayout>
#include <algorithm>

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
    pictures_.emplace_back();
    rebuild();
}

void SamplesPanel::set_image(const QString& image, const QImage& picture, const QString& problem) {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i].image != image) continue;
        entries_[i].image_loaded = !picture.isNull();
        pictures_[i] = picture.isNull() ? QImage()
                                        : picture.scaled(kThumb, kThumb, Qt::KeepAspectRatio,
                                                         Qt::SmoothTransformation);
        if (picture.isNull() && !problem.isEmpty()) entries_[i].text = problem;
    }
    rebuild();
}

void SamplesPanel::drop_after(const QString& run, std::int64_t step) {
    std::vector<SampleEntry> kept;
    std::vector<QImage> kept_pictures;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i].run == run && entries_[i].step > step) continue;
        kept.push_back(std::move(entries_[i]));
        kept_pictures.push_back(std::move(pictures_[i]));
    }
    if (kept.size() == entries_.size()) return;
    entries_ = std::move(kept);
    pictures_ = std::move(kept_pictures);
    rebuild();
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
        if (!e.image.isEmpty() && !e.image_loaded && e.text.isEmpty())
            text += QStringLiteral("\n") + tr("(loading %1…)").arg(e.image);
        auto* item = new QListWidgetItem(text, list_);
        if (!pictures_[k].isNull()) item->setIcon(QIcon(QPixmap::fromImage(pictures_[k])));
    }
}

}  // namespace crucible::ui
