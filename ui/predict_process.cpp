#include "ui/predict_process.h"

#include <QProcess>
#include <QRegularExpression>

#include "core/base/file_io.h"

namespace crucible::ui {

namespace fs = std::filesystem;

PredictProcess::PredictProcess(QString program, QString task, fs::path weights,
                               std::vector<fs::path> images, QStringList extra_args,
                               QObject* parent)
    : Predictor(std::move(images), parent),
      program_(std::move(program)),
      task_(std::move(task)),
      weights_(std::move(weights)),
      extra_args_(std::move(extra_args)) {}

PredictProcess::~PredictProcess() {
    if (process_ && process_->state() != QProcess::NotRunning) {
        process_->kill();
        process_->waitForFinished(2000);
    }
}

void PredictProcess::start() {
    if (program_.isEmpty())
        return fail(
            tr("predicting needs the crucible command line next to the studio (it comes "
               "with the GPU server's tools)"));
    if (!stage()) return;
    // The command's options as its key=value words, its output in the temporary folder.
    QStringList args = {QStringLiteral("predict"), task_};
    Json options = command_options(weights_);
    options["project"] = path_to_utf8(work_folder());
    for (const auto& [key, value] : options.items())
        args << QString::fromStdString(
            key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
    args << extra_args_;
    process_ = new QProcess(this);
    process_->setProcessChannelMode(QProcess::MergedChannels);
    connect(process_, &QProcess::readyReadStandardOutput, this, [this] {
        // "image 3/40 path: ..." per image predicted.
        static const QRegularExpression line(QStringLiteral("^image (\\d+)/(\\d+) "));
        pending_output_ += process_->readAllStandardOutput();
        qsizetype newline;
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
        read_labels(work_folder() / kOutputName / "labels");
        succeed();
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

}  // namespace crucible::ui
