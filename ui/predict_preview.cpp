#include "ui/predict_preview.h"

#include <QHBoxLayout>
#include <QImageReader>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QProcess>
#include <QSlider>
#include <QVBoxLayout>

#include "core/base/file_io.h"
#include "core/data/formats/yolo_labels.h"
#include "ui/class_colors.h"

namespace crucible::ui {

namespace fs = std::filesystem;

namespace {

constexpr int kPictureSize = 360;

}  // namespace

std::vector<Detection> parse_detections(const std::string& text) {
    std::vector<Detection> out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const auto tokens =
            data::split_label_tokens(std::string_view(text).substr(start, end - start));
        start = end + 1;
        if (tokens.size() != 6) continue;
        double v[6];
        bool ok = true;
        for (int i = 0; i < 6 && ok; ++i)
            ok = data::parse_label_number(tokens[static_cast<std::size_t>(i)], v[i]);
        if (!ok || v[0] < 0 || v[0] != static_cast<int>(v[0])) continue;
        out.push_back({static_cast<int>(v[0]), v[1], v[2], v[3], v[4], v[5]});
    }
    return out;
}

PredictPreview::PredictPreview(QString program, QString task, fs::path weights,
                               std::vector<fs::path> images, std::vector<std::string> class_names,
                               QStringList extra_args, QWidget* parent)
    : QWidget(parent),
      program_(std::move(program)),
      task_(std::move(task)),
      weights_(std::move(weights)),
      images_(std::move(images)),
      class_names_(std::move(class_names)),
      extra_args_(std::move(extra_args)) {
    pictures_ = new QListWidget(this);
    pictures_->setViewMode(QListView::IconMode);
    pictures_->setIconSize(QSize(kPictureSize, kPictureSize));
    pictures_->setResizeMode(QListView::Adjust);
    pictures_->setMovement(QListView::Static);
    pictures_->setSpacing(6);
    slider_ = new QSlider(Qt::Horizontal, this);
    slider_->setRange(1, 990);  // thousandths
    slider_->setValue(static_cast<int>(confidence_ * 1000));
    slider_->setMaximumWidth(300);
    status_ = new QLabel(tr("predicting…"), this);
    status_->setWordWrap(true);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Confidence"), this));
    bar->addWidget(slider_);
    bar->addWidget(status_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(pictures_, 1);
    connect(slider_, &QSlider::valueChanged, this, [this](int v) { set_confidence(v / 1000.0); });
}

PredictPreview::~PredictPreview() {
    if (process_ && process_->state() != QProcess::NotRunning) {
        process_->kill();
        process_->waitForFinished(2000);
    }
}

void PredictPreview::start() {
    work_ = std::make_unique<QTemporaryDir>();
    if (program_.isEmpty() || !work_->isValid()) {
        finished_ = true;
        error_ = program_.isEmpty()
                     ? tr("the preview needs the crucible command line next to the studio (it "
                          "comes with the GPU server's tools)")
                     : tr("no temporary folder for the preview");
        status_->setText(error_);
        emit done(false);
        return;
    }
    // The chosen pictures in one folder (links where the file system allows), as `source`.
    const fs::path source = path_from_utf8(work_->path().toStdString()) / "images";
    std::error_code ec;
    fs::create_directories(source, ec);
    for (std::size_t i = 0; i < images_.size(); ++i) {
        // Numbered names: two pictures of one name from different folders stay apart.
        fs::path name = path_from_utf8(std::to_string(i) + "_");
        name += images_[i].filename();
        fs::create_hard_link(images_[i], source / name, ec);
        if (ec) fs::copy_file(images_[i], source / name, ec);
    }
    QStringList args = {QStringLiteral("predict"),
                        task_,
                        QStringLiteral("source=") + QString::fromStdString(path_to_utf8(source)),
                        QStringLiteral("model=") + QString::fromStdString(path_to_utf8(weights_)),
                        QStringLiteral("conf=%1").arg(kLowestConfidence),
                        QStringLiteral("save=false"),
                        QStringLiteral("save_txt=true"),
                        QStringLiteral("project=") + work_->path(),
                        QStringLiteral("name=out"),
                        QStringLiteral("exist_ok=true")};
    QStringList all = args;
    all << extra_args_;
    process_ = new QProcess(this);
    process_->setProcessChannelMode(QProcess::MergedChannels);
    connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        finished_ = true;
        const QString output = QString::fromUtf8(process_->readAll()).trimmed();
        if (status != QProcess::NormalExit || code != 0) {
            error_ = tr("prediction failed (exit %1): %2").arg(code).arg(output.right(1500));
            status_->setText(error_);
            emit done(false);
            return;
        }
        read_results();
        emit done(true);
    });
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        finished_ = true;
        error_ = tr("cannot start %1: %2").arg(program_, process_->errorString());
        status_->setText(error_);
        emit done(false);
    });
    status_->setText(tr("predicting %n picture(s)…", nullptr, static_cast<int>(images_.size())));
    process_->start(program_, all);
}

void PredictPreview::read_results() {
    const fs::path labels = path_from_utf8(work_->path().toStdString()) / "out" / "labels";
    detections_.assign(images_.size(), {});
    for (std::size_t i = 0; i < images_.size(); ++i) {
        fs::path file = path_from_utf8(std::to_string(i) + "_");
        file += images_[i].stem();
        file += ".txt";
        std::error_code ec;
        if (fs::exists(labels / file, ec))
            detections_[i] = parse_detections(read_file_bytes(labels / file));
    }
    redraw();
}

void PredictPreview::set_confidence(double conf) {
    confidence_ = conf;
    if (slider_->value() != static_cast<int>(conf * 1000 + 0.5)) {
        QSignalBlocker block(slider_);
        slider_->setValue(static_cast<int>(conf * 1000 + 0.5));
    }
    if (finished_ && error_.isEmpty()) redraw();
}

int PredictPreview::shown_detections() const {
    int n = 0;
    for (const auto& image : detections_)
        for (const auto& d : image)
            n += d.conf >= confidence_;
    return n;
}

void PredictPreview::redraw() {
    pictures_->clear();
    for (std::size_t i = 0; i < images_.size(); ++i) {
        QImageReader reader(QString::fromStdString(path_to_utf8(images_[i])));
        reader.setAutoTransform(true);
        QImage image = reader.read();
        if (image.isNull()) continue;
        image =
            image.scaled(kPictureSize, kPictureSize, Qt::KeepAspectRatio, Qt::SmoothTransformation)
                .convertToFormat(QImage::Format_RGB32);
        QPainter p(&image);
        const double w = image.width(), h = image.height();
        int shown = 0;
        for (const auto& d : i < detections_.size() ? detections_[i] : std::vector<Detection>{}) {
            if (d.conf < confidence_) continue;
            ++shown;
            const QColor color = class_color(d.cls);
            const QRectF box((d.cx - d.w / 2) * w, (d.cy - d.h / 2) * h, d.w * w, d.h * h);
            p.setPen(QPen(color, 2));
            p.drawRect(box);
            const QString name =
                d.cls < static_cast<int>(class_names_.size())
                    ? QString::fromStdString(class_names_[static_cast<std::size_t>(d.cls)])
                    : tr("class %1").arg(d.cls);
            const QString label = QStringLiteral("%1 %2").arg(name).arg(d.conf, 0, 'f', 2);
            const QRectF text_box(box.left(), std::max(0.0, box.top() - 16),
                                  p.fontMetrics().horizontalAdvance(label) + 6, 16);
            p.fillRect(text_box, color);
            p.setPen(Qt::black);
            p.drawText(text_box, Qt::AlignCenter, label);
        }
        p.end();
        auto* item = new QListWidgetItem(
            QIcon(QPixmap::fromImage(image)),
            tr("%1 · %2 boxes")
                .arg(QString::fromStdString(path_to_utf8(images_[i].filename())))
                .arg(shown));
        pictures_->addItem(item);
    }
    status_->setText(tr("confidence ≥ %1 · %2 detections in %3 pictures")
                         .arg(confidence_, 0, 'f', 3)
                         .arg(shown_detections())
                         .arg(images_.size()));
}

}  // namespace crucible::ui
