#include "ui/predict_process.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include "core/base/file_io.h"
#include "core/data/formats/yolo_labels.h"

namespace crucible::ui {

namespace fs = std::filesystem;

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

PredictProcess::PredictProcess(QString program, QString task, fs::path weights,
                               std::vector<fs::path> images, QStringList extra_args,
                               QObject* parent)
    : QObject(parent),
      program_(std::move(program)),
      task_(std::move(task)),
      weights_(std::move(weights)),
      images_(std::move(images)),
      extra_args_(std::move(extra_args)) {}

PredictProcess::~PredictProcess() {
    if (process_ && process_->state() != QProcess::NotRunning) {
        process_->kill();
        process_->waitForFinished(2000);
    }
}

void PredictProcess::fail(const QString& message) {
    finished_ = true;
    error_ = message;
    emit done(false);
}

void PredictProcess::start() {
    work_ = std::make_unique<QTemporaryDir>();
    if (program_.isEmpty())
        return fail(
            tr("predicting needs the crucible command line next to the studio (it comes "
               "with the GPU server's tools)"));
    if (!work_->isValid()) return fail(tr("no temporary folder to predict in"));
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
    args << extra_args_;
    process_ = new QProcess(this);
    process_->setProcessChannelMode(QProcess::MergedChannels);
    connect(process_, &QProcess::readyReadStandardOutput, this, [this] {
        // "image 3/40 path: ..." per image predicted.
        static const QRegularExpression line(QStringLiteral("^image (\\d+)/(\\d+) "));
        pending_output_ += process_->readAllStandardOutput();
        int newline;
        while ((newline = pending_output_.indexOf('\n')) >= 0) {
            const QString text = QString::fromUtf8(pending_output_.left(newline));
            pending_output_.remove(0, newline + 1);
            output_ += text + QLatin1Char('\n');
            const auto m = line.match(text);
            if (m.hasMatch()) emit progress(m.captured(1).toInt(), m.captured(2).toInt());
        }
    });
    connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        output_ += QString::fromUtf8(pending_output_ + process_->readAll());
        if (canceled_) return fail(tr("canceled"));
        if (status != QProcess::NormalExit || code != 0)
            return fail(
                tr("prediction failed (exit %1): %2").arg(code).arg(output_.trimmed().right(1500)));
        read_results();
        finished_ = true;
        emit done(true);
    });
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        fail(tr("cannot start %1: %2").arg(program_, process_->errorString()));
    });
    emit progress(0, static_cast<int>(images_.size()));
    process_->start(program_, args);
}

void PredictProcess::cancel() {
    if (!process_ || process_->state() == QProcess::NotRunning) return;
    canceled_ = true;
    process_->kill();
}

void PredictProcess::read_results() {
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
}

}  // namespace crucible::ui
