#include "ui/predict_preview.h"

#include <QHBoxLayout>
#include <QImageReader>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QSlider>
#include <QVBoxLayout>

#include "core/base/file_io.h"
#include "ui/class_colors.h"

namespace crucible::ui {

namespace fs = std::filesystem;

namespace {

constexpr int kPictureSize = 360;

}  // namespace

PredictPreview::PredictPreview(QString program, QString task, fs::path weights,
                               std::vector<fs::path> images, std::vector<std::string> class_names,
                               QStringList extra_args, QWidget* parent)
    : QWidget(parent), class_names_(std::move(class_names)) {
    predict_ = new PredictProcess(std::move(program), std::move(task), std::move(weights),
                                  std::move(images), std::move(extra_args), this);
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

PredictPreview::~PredictPreview() = default;

void PredictPreview::start() {
    connect(predict_, &PredictProcess::done, this, [this](bool ok) {
        if (ok)
            redraw();
        else
            status_->setText(predict_->error());
        emit done(ok);
    });
    status_->setText(
        tr("predicting %n picture(s)…", nullptr, static_cast<int>(predict_->images().size())));
    predict_->start();
}

void PredictPreview::set_confidence(double conf) {
    confidence_ = conf;
    if (slider_->value() != static_cast<int>(conf * 1000 + 0.5)) {
        QSignalBlocker block(slider_);
        slider_->setValue(static_cast<int>(conf * 1000 + 0.5));
    }
    if (finished() && error().isEmpty()) redraw();
}

int PredictPreview::shown_detections() const {
    int n = 0;
    for (const auto& image : detections())
        for (const auto& d : image)
            n += d.conf >= confidence_;
    return n;
}

void PredictPreview::redraw() {
    pictures_->clear();
    for (std::size_t i = 0; i < predict_->images().size(); ++i) {
        QImageReader reader(QString::fromStdString(path_to_utf8(predict_->images()[i])));
        reader.setAutoTransform(true);
        QImage image = reader.read();
        if (image.isNull()) continue;
        image =
            image.scaled(kPictureSize, kPictureSize, Qt::KeepAspectRatio, Qt::SmoothTransformation)
                .convertToFormat(QImage::Format_RGB32);
        QPainter p(&image);
        const double w = image.width(), h = image.height();
        int shown = 0;
        for (const auto& d : i < detections().size() ? detections()[i] : std::vector<Detection>{}) {
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
                .arg(QString::fromStdString(path_to_utf8(predict_->images()[i].filename())))
                .arg(shown));
        pictures_->addItem(item);
    }
    status_->setText(tr("confidence ≥ %1 · %2 detections in %3 pictures")
                         .arg(confidence_, 0, 'f', 3)
                         .arg(shown_detections())
                         .arg(predict_->images().size()));
}

}  // namespace crucible::ui
