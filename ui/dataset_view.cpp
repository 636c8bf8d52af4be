#include "ui/dataset_view.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListView>
#include <QPainter>
#include <QPixmap>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "core/base/file_io.h"
#include "ui/background.h"
#include "ui/class_colors.h"
#include "ui/plot_style.h"
#include "ui/thumbnail_cache.h"

namespace crucible::ui {

namespace {
QString file_of(const DatasetImage& img) {
    return QString::fromStdString(path_to_utf8(img.path));
}
}  // namespace

DatasetModel::DatasetModel(ThumbnailCache* cache, QObject* parent)
    : QAbstractListModel(parent), cache_(cache) {
    connect(cache_, &ThumbnailCache::ready, this, &DatasetModel::on_ready);
}

void DatasetModel::set_content(std::shared_ptr<DatasetContent> content) {
    content_ = std::move(content);
    refilter();
}

void DatasetModel::set_filter(const DatasetFilter& filter) {
    filter_ = filter;
    refilter();
}

void DatasetModel::set_filter(int cls, const QString& split) {
    filter_.cls = cls;
    filter_.split = split;
    refilter();
}

void DatasetModel::set_file_problems(std::vector<std::string> problems) {
    file_problems_ = std::move(problems);
    refilter();
}

ImageProblems DatasetModel::problems(int i) const {
    if (!content_ || i < 0 || i >= static_cast<int>(content_->images.size())) return {};
    const auto at = static_cast<std::size_t>(i);
    const QString file =
        at < file_problems_.size() ? QString::fromStdString(file_problems_[at]) : QString();
    return image_problems(content_->images[at], static_cast<int>(content_->class_names.size()),
                          file);
}

void DatasetModel::refilter() {
    beginResetModel();
    rows_.clear();
    row_of_.clear();
    cache_->cancel_pending();
    if (content_) {
        const int cls = filter_.cls;
        const std::string tag = filter_.tag.toStdString();
        for (std::size_t i = 0; i < content_->images.size(); ++i) {
            const auto& img = content_->images[i];
            const int index = static_cast<int>(i);
            if (!filter_.split.isEmpty() && QString::fromStdString(img.split) != filter_.split)
                continue;
            if (cls >= 0 && std::none_of(img.boxes.begin(), img.boxes.end(),
                                         [&](const data::Box& b) { return b.cls == cls; }))
                continue;
            if (!tag.empty() && !has_tag(img.tags, tag)) continue;
            if (filter_.problem != ProblemFilter::All && !problems(index).matches(filter_.problem))
                continue;
            row_of_.insert(file_of(img), static_cast<int>(rows_.size()));
            rows_.push_back(static_cast<int>(i));
        }
    }
    endResetModel();
}

int DatasetModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DatasetModel::image_index(int row) const {
    return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[static_cast<std::size_t>(row)]
                                                            : -1;
}

QPixmap thumbnail_with_boxes(const QImage& thumb, const std::vector<data::Box>& boxes,
                             const std::vector<std::string>& class_colors) {
    QPixmap out = QPixmap::fromImage(thumb);
    if (boxes.empty()) return out;
    QPainter p(&out);
    const double w = out.width(), h = out.height();
    for (const auto& b : boxes) {
        p.setPen(QPen(class_color(b.cls, class_colors), 1.5));
        p.drawRect(QRectF((b.cx - b.w / 2) * w, (b.cy - b.h / 2) * h, b.w * w, b.h * h));
    }
    return out;
}

QVariant DatasetModel::data(const QModelIndex& index, int role) const {
    const int i = image_index(index.row());
    if (i < 0 || !content_) return {};
    const auto& img = content_->images[static_cast<std::size_t>(i)];
    switch (role) {
        case Qt::DisplayRole:
            return QString::fromStdString(path_to_utf8(img.path.filename()));
        case Qt::DecorationRole: {
            // Asking the cache queues the decode; only visible rows are asked (the view asks
            // for what it paints), so a 10,000-image dataset decodes as it scrolls.
            QImage thumb = cache_->request(file_of(img));
            if (thumb.isNull()) {
                QPixmap placeholder(cache_->size());
                placeholder.fill(QColor(128, 128, 128, 60));
                return placeholder;
            }
            return thumbnail_with_boxes(thumb, img.boxes, content_->class_colors);
        }
        case Qt::ToolTipRole: {
            QString tip = QStringLiteral("%1\n%2 · %3 boxes")
                              .arg(file_of(img), QString::fromStdString(img.split))
                              .arg(img.boxes.size());
            const QStringList t = tag_texts(img.tags);
            if (!t.isEmpty()) tip += QLatin1Char('\n') + t.join(QStringLiteral(", "));
            const QString p = problems(i).text();
            if (!p.isEmpty()) tip += QLatin1Char('\n') + p;
            return tip;
        }
        default:
            return {};
    }
}

void DatasetModel::on_ready(const QString& file) {
    auto it = row_of_.find(file);
    if (it == row_of_.end()) return;
    QModelIndex idx = index(*it);
    emit dataChanged(idx, idx, {Qt::DecorationRole});
}

DatasetView::DatasetView(std::shared_ptr<DatasetContent> content, const QString& name,
                         QWidget* parent)
    : QWidget(parent), content_(std::move(content)) {
    cache_ = new ThumbnailCache(QSize(160, 120), 256ll << 20, this);
    model_ = new DatasetModel(cache_, this);
    auto* outer = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    class_filter_ = new QComboBox(this);
    split_filter_ = new QComboBox(this);
    tag_filter_ = new QComboBox(this);
    problem_filter_ = new QComboBox(this);
    class_filter_->setObjectName(QStringLiteral("class_filter"));
    split_filter_->setObjectName(QStringLiteral("split_filter"));
    tag_filter_->setObjectName(QStringLiteral("tag_filter"));
    problem_filter_->setObjectName(QStringLiteral("problem_filter"));
    count_ = new QLabel(this);
    tag_label_ = new QLabel(tr("Tag"), this);
    bar->addWidget(new QLabel(QStringLiteral("<b>%1</b>").arg(name.toHtmlEscaped()), this));
    bar->addSpacing(16);
    bar->addWidget(new QLabel(tr("Class"), this));
    bar->addWidget(class_filter_);
    bar->addWidget(new QLabel(tr("Split"), this));
    bar->addWidget(split_filter_);
    bar->addWidget(tag_label_);
    bar->addWidget(tag_filter_);
    bar->addWidget(new QLabel(tr("Problems"), this));
    bar->addWidget(problem_filter_);
    bar->addStretch(1);
    bar->addWidget(count_);
    outer->addLayout(bar);

    auto* split = new QSplitter(Qt::Horizontal, this);
    grid_ = new QListView(split);
    grid_->setViewMode(QListView::IconMode);
    grid_->setResizeMode(QListView::Adjust);
    grid_->setUniformItemSizes(true);
    grid_->setLayoutMode(QListView::Batched);
    grid_->setBatchSize(200);
    grid_->setMovement(QListView::Static);
    grid_->setIconSize(cache_->size());
    grid_->setGridSize(cache_->size() + QSize(16, 28));
    grid_->setModel(model_);
    stats_ = new QCustomPlot(split);
    stats_->setMinimumWidth(220);
    stats_->setMaximumWidth(360);
    follow_palette(stats_);
    split->addWidget(grid_);
    split->addWidget(stats_);
    split->setStretchFactor(0, 1);
    outer->addWidget(split, 1);

    fill_class_filter();
    std::set<std::string> splits;
    for (const auto& img : content_->images)
        splits.insert(img.split);
    split_filter_->addItem(tr("all splits"), QString());
    for (const auto& s : splits)
        split_filter_->addItem(QString::fromStdString(s), QString::fromStdString(s));
    tag_filter_->addItem(tr("any tags"), QString());
    for (auto [text, filter] : {std::pair{tr("all images"), ProblemFilter::All},
                                std::pair{tr("any problem"), ProblemFilter::AnyProblem},
                                std::pair{tr("unreadable image"), ProblemFilter::UnreadableImage},
                                std::pair{tr("bad box"), ProblemFilter::BadBox},
                                std::pair{tr("no boxes"), ProblemFilter::NoBoxes}})
        problem_filter_->addItem(text, static_cast<int>(filter));
    for (QComboBox* c : {class_filter_, split_filter_, tag_filter_, problem_filter_})
        connect(c, &QComboBox::currentIndexChanged, this, &DatasetView::apply_filter);
    connect(grid_, &QListView::activated, this, [this](const QModelIndex& index) {
        int i = model_->image_index(index.row());
        if (i >= 0) emit open_image(i);
    });
    model_->set_content(content_);
    update_filter_lists();
    apply_filter();
    check_files();
}

// The class names as they are now (the class editor renames, adds and merges), the choice kept
// where its class still exists.
void DatasetView::fill_class_filter() {
    QSignalBlocker block(class_filter_);
    const int current = class_filter_->count() > 0 ? class_filter_->currentData().toInt() : -1;
    class_filter_->clear();
    class_filter_->addItem(tr("all classes"), -1);
    for (std::size_t c = 0; c < content_->class_names.size(); ++c)
        class_filter_->addItem(QString::fromStdString(content_->class_names[c]),
                               static_cast<int>(c));
    class_filter_->setCurrentIndex(std::max(0, class_filter_->findData(current)));
}

DatasetView::~DatasetView() {
    *stop_ = true;  // a file check still running stops at the next image
}

void DatasetView::apply_filter() {
    DatasetFilter f;
    f.cls = class_filter_->currentData().toInt();
    f.split = split_filter_->currentData().toString();
    f.tag = tag_filter_->currentData().toString();
    f.problem = static_cast<ProblemFilter>(problem_filter_->currentData().toInt());
    model_->set_filter(f);
    count_->setText(count_text());
    update_stats();  // the histogram counts what the filter shows
}

QString DatasetView::count_text() const {
    return tr("%1 of %2 images").arg(model_->rowCount()).arg(content_->images.size());
}

void DatasetView::set_filter(int cls, const QString& split) {
    class_filter_->setCurrentIndex(std::max(0, class_filter_->findData(cls)));
    split_filter_->setCurrentIndex(std::max(0, split_filter_->findData(split)));
}

void DatasetView::set_filter(const DatasetFilter& filter) {
    set_filter(filter.cls, filter.split);
    tag_filter_->setCurrentIndex(std::max(0, tag_filter_->findData(filter.tag)));
    problem_filter_->setCurrentIndex(
        std::max(0, problem_filter_->findData(static_cast<int>(filter.problem))));
}

void DatasetView::check_files() {
    std::vector<std::filesystem::path> files;
    files.reserve(content_->images.size());
    for (const auto& img : content_->images)
        files.push_back(img.path);
    auto stop = stop_;
    run_in_background<std::vector<std::string>>(
        this, [files, stop] { return check_image_files(files, stop.get()); },
        [this](std::vector<std::string> problems, QString error) {
            if (!error.isEmpty()) problems.assign(content_->images.size(), error.toStdString());
            model_->set_file_problems(std::move(problems));
            files_checked_ = true;
            update_filter_lists();
            apply_filter();
            emit files_checked_changed();
        });
}

// Tag values as they occur, and the problem counts, in the filter lists.
void DatasetView::update_filter_lists() {
    QStringList tags;
    std::size_t any = 0, unreadable = 0, bad_box = 0, no_boxes = 0;
    for (int i = 0; i < static_cast<int>(content_->images.size()); ++i) {
        for (const auto& t : tag_texts(content_->images[static_cast<std::size_t>(i)].tags))
            if (!tags.contains(t)) tags << t;
        const ImageProblems p = model_->problems(i);
        any += p.any();
        unreadable += !p.file.isEmpty();
        bad_box += !p.boxes.isEmpty();
        no_boxes += p.no_boxes;
    }
    tags.sort();
    {
        QSignalBlocker block(tag_filter_);
        const QString current = tag_filter_->currentData().toString();
        while (tag_filter_->count() > 1)
            tag_filter_->removeItem(1);
        for (const auto& t : tags)
            tag_filter_->addItem(t, t);
        tag_filter_->setCurrentIndex(std::max(0, tag_filter_->findData(current)));
    }
    tag_label_->setVisible(!tags.isEmpty());
    tag_filter_->setVisible(!tags.isEmpty());
    const QString pending = files_checked_ ? QString() : tr(", checking files…");
    auto set_text = [this](ProblemFilter f, const QString& text) {
        problem_filter_->setItemText(problem_filter_->findData(static_cast<int>(f)), text);
    };
    set_text(ProblemFilter::AnyProblem, tr("any problem (%1%2)").arg(any).arg(pending));
    set_text(ProblemFilter::UnreadableImage,
             tr("unreadable image (%1%2)").arg(unreadable).arg(pending));
    set_text(ProblemFilter::BadBox, tr("bad box (%1)").arg(bad_box));
    set_text(ProblemFilter::NoBoxes, tr("no boxes (%1)").arg(no_boxes));
}

void DatasetView::content_changed() {
    fill_class_filter();
    update_filter_lists();
    apply_filter();
}

void DatasetView::update_stats() {
    stats_->clearPlottables();
    const auto n = content_->class_names.size();
    QVector<double> ticks, counts;
    QVector<QString> labels;
    std::vector<double> per_class(n, 0);
    for (int row = 0; row < model_->rowCount(); ++row)
        for (const auto& b :
             content_->images[static_cast<std::size_t>(model_->image_index(row))].boxes)
            if (b.cls >= 0 && static_cast<std::size_t>(b.cls) < n)
                per_class[static_cast<std::size_t>(b.cls)] += 1;
    shown_counts_ = per_class;
    for (std::size_t c = 0; c < n; ++c) {
        ticks << static_cast<double>(c);
        counts << per_class[c];
        labels << QString::fromStdString(content_->class_names[c]);
    }
    auto* bars = new QCPBars(stats_->yAxis, stats_->xAxis);  // horizontal bars
    bars->setData(ticks, counts);
    bars->setBrush(QColor(42, 130, 218, 160));
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    ticker->addTicks(ticks, labels);
    stats_->yAxis->setTicker(ticker);
    stats_->xAxis->setLabel(tr("instances per class"));
    stats_->rescaleAxes();
    stats_->yAxis->setRange(-0.7, std::max<double>(static_cast<double>(n) - 0.3, 0.3));
    double most = 1;
    for (double v : per_class)
        most = std::max(most, v);
    stats_->xAxis->setRange(0, most * 1.1);
    stats_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace crucible::ui
