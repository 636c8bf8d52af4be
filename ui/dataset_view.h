#pragma once
// The dataset view: a thumbnail grid (decoded in the background, cached, so scrolling stays
// smooth at 10,000 images), filters by class, split, tag (the tag filter shows only when some
// image has tags) and validation problem
// (ui/dataset_checks.h: image files are checked in the background when the view opens), instances
// per class as a bar chart, and a double click that opens the image in the annotation editor.
#include <QAbstractListModel>
#include <QHash>
#include <QImage>
#include <QPixmap>
#include <QWidget>
#include <atomic>
#include <memory>
#include <vector>

#include "ui/annotation_store.h"
#include "ui/dataset_checks.h"

class QComboBox;
class QLabel;
class QListView;
class QCustomPlot;

namespace crucible::ui {

class ThumbnailCache;

struct DatasetFilter {
    int cls = -1;   // -1 = every class
    QString split;  // empty = every split
    QString tag;    // "key=value"; empty = any tags
    ProblemFilter problem = ProblemFilter::All;
};

// A thumbnail with its boxes drawn in their classes' colours (boxes normalized, as stored).
QPixmap thumbnail_with_boxes(const QImage& thumb, const std::vector<data::Box>& boxes,
                             const std::vector<std::string>& class_colors = {});

class DatasetModel : public QAbstractListModel {
    Q_OBJECT
  public:
    DatasetModel(ThumbnailCache* cache, QObject* parent = nullptr);
    void set_content(std::shared_ptr<DatasetContent> content);
    void set_filter(const DatasetFilter& filter);
    // cls -1 = every class; split empty = every split (tag and problem filters unchanged).
    void set_filter(int cls, const QString& split);
    const DatasetFilter& filter() const { return filter_; }
    // data::image_file_problem of each image, in content order ("" when fine).
    void set_file_problems(std::vector<std::string> problems);
    ImageProblems problems(int image_index) const;
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
    DatasetFilter filter_;
    std::vector<std::string> file_problems_;
};

class DatasetView : public QWidget {
    Q_OBJECT
  public:
    DatasetView(std::shared_ptr<DatasetContent> content, const QString& name,
                QWidget* parent = nullptr);
    ~DatasetView() override;
    DatasetModel* model() const { return model_; }
    QListView* grid() const { return grid_; }
    ThumbnailCache* cache() const { return cache_; }
    const std::shared_ptr<DatasetContent>& content() const { return content_; }
    void set_filter(int cls, const QString& split);
    void set_filter(const DatasetFilter& filter);
    // True once the background check of the image files finished.
    bool files_checked() const { return files_checked_; }
    // "12 of 340 images"
    QString count_text() const;
    // Call when the content changed elsewhere (boxes, classes).
    void content_changed();
    // What the histogram shows: instances per class in the images the filter lets through.
    const std::vector<double>& shown_class_counts() const { return shown_counts_; }

  signals:
    void open_image(int image_index);
    void files_checked_changed();

  private:
    void update_stats();
    void fill_class_filter();
    std::vector<double> shown_counts_;
    void apply_filter();
    void check_files();
    void update_filter_lists();

    std::shared_ptr<DatasetContent> content_;
    ThumbnailCache* cache_ = nullptr;
    DatasetModel* model_ = nullptr;
    QListView* grid_ = nullptr;
    QComboBox* class_filter_ = nullptr;
    QComboBox* split_filter_ = nullptr;
    QComboBox* tag_filter_ = nullptr;
    QLabel* tag_label_ = nullptr;
    QComboBox* problem_filter_ = nullptr;
    QLabel* count_ = nullptr;
    bool files_checked_ = false;
    std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
    QCustomPlot* stats_ = nullptr;
};

}  // namespace crucible::ui
