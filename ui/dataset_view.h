#pragma once
// The dataset view: a thumbnail grid (decoded in the background, cached, so scrolling stays
// smooth at 10,000 images), filters by class and split, instances per class as a bar chart, and
// a double click that opens the image in the annotation editor.
#include <QAbstractListModel>
#include <QHash>
#include <QWidget>
#include <memory>
#include <vector>

#include "ui/annotation_store.h"

class QComboBox;
class QLabel;
class QListView;
class QCustomPlot;

namespace crucible::ui {

class ThumbnailCache;

class DatasetModel : public QAbstractListModel {
    Q_OBJECT
  public:
    DatasetModel(ThumbnailCache* cache, QObject* parent = nullptr);
    void set_content(std::shared_ptr<DatasetContent> content);
    // cls -1 = every class; split empty = every split.
    void set_filter(int cls, const QString& split);
    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    int image_index(int row) const;  // index into content->images
    // Re-reads rows after the content changed (e.g. edits in the annotation editor).
    void refilter();

  private:
    void on_ready(const QString& file);

    ThumbnailCache* cache_;
    std::shared_ptr<DatasetContent> content_;
    std::vector<int> rows_;  // image indexes shown
    QHash<QString, int> row_of_;
    int cls_ = -1;
    QString split_;
};

class DatasetView : public QWidget {
    Q_OBJECT
  public:
    DatasetView(std::shared_ptr<DatasetContent> content, const QString& name,
                QWidget* parent = nullptr);
    DatasetModel* model() const { return model_; }
    QListView* grid() const { return grid_; }
    ThumbnailCache* cache() const { return cache_; }
    const std::shared_ptr<DatasetContent>& content() const { return content_; }
    void set_filter(int cls, const QString& split);
    // Call when the content changed elsewhere.
    void content_changed();

  signals:
    void open_image(int image_index);

  private:
    void update_stats();

    std::shared_ptr<DatasetContent> content_;
    ThumbnailCache* cache_ = nullptr;
    DatasetModel* model_ = nullptr;
    QListView* grid_ = nullptr;
    QComboBox* class_filter_ = nullptr;
    QComboBox* split_filter_ = nullptr;
    QLabel* count_ = nullptr;
    QCustomPlot* stats_ = nullptr;
};

}  // namespace crucible::ui
