#pragma once
// The run setup's memory check: the run's predicted peak device memory against the chosen GPU's,
// known before the run is submitted. The prediction is the task's own (Task::estimate_memory),
// asked through `crucible train <task> ... dry_run=true gpu_memory=<GiB>` beside the studio (the
// studio links no LibTorch and reads no model); its paths are this computer's, as the submit
// uploads them from here. A label under the device row says what it found; the run setup asks
// before submitting a run that will not fit.
#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>
#include <optional>

class QLabel;
class QTimer;

namespace crucible::ui {

struct DryRunVerdict {
    double predicted_gib = 0;
    double capacity_gib = 0;
    bool fits = true;
};

// The verdict in a dry run's output (its "predicted peak" line; exit code 3: will not fit) for a
// GPU of `capacity_gib`; nullopt when the task makes no prediction or the dry run failed.
std::optional<DryRunVerdict> parse_dry_run(const QString& output, int exit_code,
                                           double capacity_gib);

class MemoryCheck : public QObject {
    Q_OBJECT
  public:
    // Runs the command line with `args` and calls `done(exit_code, output)` on the GUI thread
    // (exit code -1: it did not run).
    using DryRunner =
        std::function<void(const QStringList& args, std::function<void(int, const QString&)> done)>;

    // `label` shows the result (hidden while there is nothing to say).
    MemoryCheck(QLabel* label, QObject* parent);
    void set_dry_runner(DryRunner runner) { runner_ = std::move(runner); }

    // Checks the run `train_args` describe (the task and its key=value words) on a GPU of
    // `gpu_gib` (0: no GPU chosen, nothing to check) after a pause for typing; a newer request
    // replaces an older one, and an answer to an older one is dropped.
    void request(const QStringList& train_args, double gpu_gib);
    // Runs the pending request now instead of after the pause.
    void check_now();

    // The verdict for the latest request, once its answer came.
    const std::optional<DryRunVerdict>& verdict() const { return verdict_; }
    QString text() const;

  signals:
    void checked();

  private:
    void show(const QString& text, bool warning);

    QLabel* label_;
    QTimer* timer_;
    DryRunner runner_;
    QStringList args_;
    double gpu_gib_ = 0;
    int generation_ = 0;
    bool requested_ = false;  // args_ / gpu_gib_ hold a request (answered or not)
    std::optional<DryRunVerdict> verdict_;
};

}  // namespace crucible::ui
