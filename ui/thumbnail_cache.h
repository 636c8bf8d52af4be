#pragma once
// Thumbnails decoded off the GUI thread: request() answers from the cache at once or queues a
// decode (QImageReader with a scaled size, so a 4000 px JPEG is decoded small) on a private
// QThreadPool and emits ready() on the GUI thread when done. The cache is bounded by bytes
// (LRU); queued decodes that scrolled out of view can be dropped with cancel_pending().
#include <QCache>
#include <QImage>
#include <QObject>
#include <QSet>
#include <QSize>
#include <QString>
#include <QThreadPool>
#include <atomic>
#include <memory>

namespace crucible::ui {

class ThumbnailCache : public QObject {
    Q_OBJECT
  public:
    explicit ThumbnailCache(QSize size = QSize(160, 120), qint64 max_bytes = 256ll << 20,
                            QObject* parent = nullptr);
    ~ThumbnailCache() override;

    // The thumbnail when cached; else a null image, and a decode is queued (once per file).
    QImage request(const QString& file);
    bool contains(const QString& file) const { return cache_.contains(file); }
    void cancel_pending();
    void set_threads(int n) { pool_.setMaxThreadCount(n); }
    bool wait_idle(int msecs) { return pool_.waitForDone(msecs); }
    int decoded() const { return decoded_; }
    QSize size() const { return size_; }

  signals:
    void ready(const QString& file);

  private:
    void finished(const QString& file, const QImage& image);

    QSize size_;
    QCache<QString, QImage> cache_;
    QSet<QString> pending_;
    QThreadPool pool_;
    std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
    int decoded_ = 0;
};

// Decodes `file` scaled to fit `size` (aspect kept); a null image when it cannot be read.
QImage decode_thumbnail(const QString& file, QSize size);

}  // namespace crucible::ui
