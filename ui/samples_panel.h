#pragma once
// The run monitor's "Samples" tab: what a run generates for its fixed prompts as it trains
// (DESIGN.md `sample` events): the text of an LLM's generation, or the picture an image model
// drew (an artifact, loaded by the monitor and handed in here). Newest first, so a person sees
// how the model evolves; a rollback removes the samples of superseded steps.
#include <QImage>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

class QListWidget;

namespace crucible::ui {

struct SampleEntry {
    std::int64_t step = -1;
    QString run, prompt, text;
    QString image;   // artifact name (relative to artifacts/), empty for text samples
    QImage picture;  // its thumbnail once loaded
    bool image_loaded() const { return !picture.isNull(); }
};

class SamplesPanel : public QWidget {
    Q_OBJECT
  public:
    explicit SamplesPanel(QWidget* parent = nullptr);

    void add(SampleEntry entry);
    // The picture of every entry naming `image`; a null image says why it is missing.
    void set_image(const QString& image, const QImage& picture, const QString& problem = {});
    // Removes the samples of steps after `step` of run `run` (a resumed run replaced them).
    void drop_after(const QString& run, std::int64_t step);

    // Oldest first, as they arrived.
    const std::vector<SampleEntry>& entries() const { return entries_; }
    QListWidget* list() const { return list_; }

  private:
    void rebuild();

    std::vector<SampleEntry> entries_;
    QListWidget* list_ = nullptr;
};

}  // namespace crucible::ui
