#include "ui/memory_check.h"

#include <QLabel>
#include <QPointer>
#include <QRegularExpression>
#include <QTimer>

namespace crucible::ui {
namespace {

// A pause after the last change before the dry run starts (a process per keystroke is waste).
constexpr int kPauseMs = 700;
// The CLI's exit code for "will not fit" (app/cli/cmd_train.cpp).
constexpr int kWillNotFit = 3;

}  // namespace

std::optional<DryRunVerdict> parse_dry_run(const QString& output, int exit_code,
                                           double capacity_gib) {
    if (exit_code != 0 && exit_code != kWillNotFit) return std::nullopt;
    static const QRegularExpression peak(
        QStringLiteral(R"(predicted peak\s+[0-9.]+ MiB \(([0-9.]+) GiB\))"));
    const auto match = peak.match(output);
    if (!match.hasMatch()) return std::nullopt;
    DryRunVerdict v;
    v.predicted_gib = match.captured(1).toDouble();
    v.capacity_gib = capacity_gib;
    v.fits = exit_code == 0;
    return v;
}

MemoryCheck::MemoryCheck(QLabel* label, QObject* parent)
    : QObject(parent), label_(label), timer_(new QTimer(this)) {
    timer_->setSingleShot(true);
    timer_->setInterval(kPauseMs);
    connect(timer_, &QTimer::timeout, this, &MemoryCheck::check_now);
    label_->setObjectName(QStringLiteral("memory_check"));
    label_->setWordWrap(true);
    label_->hide();
}

void MemoryCheck::request(const QStringList& train_args, double gpu_gib) {
    // The GPU list refreshes every few seconds: the same run on the same GPU is asked once, also
    // when its answer was no verdict (a task without a prediction) or has not come yet.
    if (requested_ && train_args == args_ && gpu_gib == gpu_gib_) return;
    requested_ = true;
    ++generation_;
    args_ = train_args;
    gpu_gib_ = gpu_gib;
    verdict_.reset();
    if (!runner_ || gpu_gib <= 0 || train_args.isEmpty()) {
        timer_->stop();
        show({}, false);
        return;
    }
    show(tr("Predicting the peak GPU memory…"), false);
    timer_->start();
}

void MemoryCheck::check_now() {
    timer_->stop();
    if (!runner_ || gpu_gib_ <= 0 || args_.isEmpty()) return;
    QStringList args{QStringLiteral("train")};
    args << args_ << QStringLiteral("dry_run=true")
         << QStringLiteral("gpu_memory=%1").arg(gpu_gib_, 0, 'f', 2);
    const int generation = generation_;
    const double gib = gpu_gib_;
    runner_(args, [self = QPointer<MemoryCheck>(this), generation, gib](int code,
                                                                        const QString& output) {
        if (!self || generation != self->generation_) return;  // a newer request replaced it
        self->verdict_ = parse_dry_run(output, code, gib);
        if (!self->verdict_) {
            self->show({}, false);  // the task predicts nothing, or its options are not complete
        } else if (self->verdict_->fits) {
            self->show(tr("Predicted peak GPU memory %1 GiB: fits the chosen GPU (%2 GiB).")
                           .arg(self->verdict_->predicted_gib, 0, 'f', 1)
                           .arg(gib, 0, 'f', 1),
                       false);
        } else {
            self->show(tr("Predicted peak GPU memory %1 GiB: will not fit the chosen GPU "
                          "(%2 GiB). A smaller batch or resolution, shorter sequences, gradient "
                          "checkpointing or (for an LLM) quantize=nf4 lower it.")
                           .arg(self->verdict_->predicted_gib, 0, 'f', 1)
                           .arg(gib, 0, 'f', 1),
                       true);
        }
        emit self->checked();
    });
}

QString MemoryCheck::text() const {
    return label_->text();
}

void MemoryCheck::show(const QString& text, bool warning) {
    label_->setText(text);
    label_->setStyleSheet(warning ? QStringLiteral("color:#d32f2f") : QString());
    label_->setVisible(!text.isEmpty());
}

}  // namespace crucible::ui
