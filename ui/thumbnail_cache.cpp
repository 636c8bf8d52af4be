#include "ui/thumbnail_cache.h"

#include <QImageReader>
#include <QMetaObject>
#include <QThread>
#include <algorithm>

namespace crucible::ui {

QImage decode_thumbnail(const QString& file, QSize size) {
    QImageReader reader(file);
    reader.setAutoTransform(true);
    const QSize full = reader.size();
    if (full.isValid() && !full.isEmpty()) {
        // Refuse absurd headers instead of allocating for them (decompression bombs).
        if (static_cast<qint64>(full.width()) * full.height() > 400ll * 1000 * 1000) return {};
        reader.setScaledSize(full.scaled(size, Qt::KeepAspectRatio));
    }
    QImage image = reader.read();
    if (image.isNull()) return {};
    if (image.width() > size.width() || image.height() > size.height())
        image = image.scaled(size, Qt::KeepAspectRatio, Qt::SmoothTransformation);
    return image.convertToFormat(QImage::Format_RGB32);
}

ThumbnailCache::ThumbnailCache(QSize size, qint64 max_bytes, QObject* parent)
    : QObject(parent), size_(size) {
    cache_.setMaxCost(static_cast<qsizetype>(std::max<qint64>(max_bytes / 1024, 1)));  // KiB
    pool_.setMaxThreadCount(std::max(1, QThread::idealThreadCount() - 1));
}

ThumbnailCache::~ThumbnailCache() {
    *alive_ = false;
    pool_.clear();
    pool_.waitForDone();
}

QImage ThumbnailCache::request(const QString& file) {
    if (QImage* hit = cache_.object(file)) return *hit;
    if (pending_.contains(file)) return {};
    pending_.insert(file);
    const QSize size = size_;
    auto alive = alive_;
    pool_.start([this, file, size, alive] {
        if (!*alive) return;
        QImage image = decode_thumbnail(file, size);
        if (!*alive) return;
        // The destructor waits for the pool, so `this` outlives this call.
        QMetaObject::invokeMethod(
            this, [this, file, image] { finished(file, image); }, Qt::QueuedConnection);
    });
    return {};
}

void ThumbnailCache::finished(const QString& file, const QImage& image) {
    if (!pending_.remove(file)) return;  // canceled meanwhile
    QImage stored = image;
    if (stored.isNull()) {
        stored = QImage(size_, QImage::Format_RGB32);
        stored.fill(QColor(90, 30, 30));  // unreadable: a dark red tile, not a retry loop
    }
    const auto cost = static_cast<qsizetype>(std::max<qint64>(stored.sizeInBytes() / 1024, 1));
    cache_.insert(file, new QImage(stored), cost);
    ++decoded_;
    emit ready(file);
}

void ThumbnailCache::cancel_pending() {
    pool_.clear();
    pending_.clear();
}

}  // namespace crucible::ui
