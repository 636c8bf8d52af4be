#pragma once
// The run monitor's data without a widget: for each run in a monitor, its chart series
// (RunSeries), progress with ETA, state and alarms, the per-class rows of its eval events and its
// validation report. Events are applied in seq order whatever their source (run_source.h), so a
// rollback drops the points, evaluations and samples it supersedes the same way everywhere.
// apply() says what changed and writes the lines for the run's log, so the view (run_monitor.h)
// redraws only that. The model never reads a file or the network and never touches a widget;
// tests/ui/run_model_test.cpp checks it without a window.
#include <QString>
#include <QStringList>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/base/event.h"
#include "ui/run_series.h"
#include "ui/validation_report.h"

namespace crucible::ui {

struct RunProgress {
    std::int64_t step = 0, total_steps = 0;
    int epoch = 0, epochs = 0;
    double items_per_s = 0, eta_s = -1;
    QString state;   // last status event's state
    QString reason;  // why it ended, when it says
    QStringList alarms;
};

// "3m 05s", "1h 02m", "2d 4h"
QString format_duration(double seconds);

// Loss curves first (0), then validation (1) and quality metrics (2), the rest, learning rates
// last (4): the order a person looks at them.
int metric_rank(const QString& metric);

// An eval event with per_class rows.
struct EvalRows {
    std::int64_t step = -1;
    int epoch = 0;
    std::vector<ClassMetricsRow> rows;
};

// A `sample` event: a generation for a fixed prompt, text or a picture (an artifact name).
struct RunSample {
    std::int64_t step = -1;
    QString prompt, text, image;
};

// What one apply() changed.
struct RunChanges {
    bool applied = false;      // at least one new event
    bool new_metrics = false;  // a metric name appeared
    bool evals = false;        // eval rows were added or dropped
    QStringList log;           // lines for the run's log, in order
    // Samples that arrived, in order, without those a later rollback of the same call dropped;
    // samples shown before with a step after `rolled_back_to` are superseded.
    std::vector<RunSample> samples;
    std::optional<std::int64_t> rolled_back_to;  // the smallest to_step of the rollbacks
    bool report_written = false;                 // an artifact event named the validation report
    bool succeeded = false;                      // a status event said the run succeeded
};

class RunModel {
  public:
    RunModel();
    ~RunModel();
    RunModel(RunModel&&) noexcept;
    RunModel& operator=(RunModel&&) noexcept;

    // Adds a run (several runs are overlaid); returns its index.
    int add_run(const QString& name);
    int run_count() const;
    const QString& name(int run) const;
    const RunSeries& series(int run) const;
    const RunProgress& progress(int run) const;
    // The agent accepted a cancel: the run reads "canceling" until its next status event says
    // how it ended (kCanceling).
    void mark_canceling(int run);
    static constexpr const char* kCanceling = "canceling";
    // Eval events with per_class rows, in order; a rollback drops the superseded ones.
    const std::vector<EvalRows>& evals(int run) const;
    // The run's validation report once one was read (null before).
    const ValidationData* validation(int run) const;
    void set_validation(int run, ValidationData report);

    // Applies events in seq order to run `run`; events already applied (seq <= the last one)
    // are skipped, and a malformed event is skipped with a line in the log.
    RunChanges apply(int run, const std::vector<Event>& events);

    // Every metric name of every run, in metric_rank order, then by name.
    QStringList metric_names() const;
    // "step 120/1600 · epoch 4/100 · 41.2 it/s · ETA 8m 52s" ("" before a progress event); no
    // ETA once the run is in a final state.
    QString progress_text(int run) const;

  private:
    struct Run;
    Run& at(int run);
    const Run& at(int run) const;
    std::vector<std::unique_ptr<Run>> runs_;
};

// True for an artifact name that is a validation report (artifacts/val_metrics.json or a
// val_metrics.json in a folder).
bool names_validation_report(const std::string& artifact);

}  // namespace crucible::ui
