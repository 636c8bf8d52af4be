#pragma once
// The run monitor's view: charts of every metric a run reports (one chart per checked metric, each
// overlaying every run in the monitor), smoothing slider, log-y, x by step / epoch / wall time,
// progress with ETA, state and alarms, the run's log, and Pause / Resume / Cancel sent to the
// agent. It holds widgets and wiring only: the data is a RunModel (run_model.h), and events come
// from RunSources (run_source.h): the project, an events.jsonl followed as it grows, or an agent
// live. Closing the monitor cancels its sources and returns at once; nothing waits for a thread.
// Validation panels appear when their data does: a sortable per-class table from the latest
// `eval` event's per_class rows, and, from a validation report the run writes
// (artifacts/val_metrics.json, fetched from the run's place in the background when the run
// succeeds or an `artifact` event names it), a confusion-matrix heat map and precision/recall
// curves. A "Samples" tab shows the `sample` events (generated text, or pictures loaded from the
// run's artifacts the same way).
#include <QString>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/base/event.h"
#include "core/net/api_client.h"
#include "ui/drill_down.h"
#include "ui/run_chart.h"
#include "ui/run_model.h"
#include "ui/run_series.h"
#include "ui/run_source.h"
#include "ui/validation_report.h"

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QTabWidget;
class QTimer;

namespace crucible::store {
class Project;
}

namespace crucible::ui {

class ConfusionMatrixPanel;
class PerClassTable;
class PrCurvePanel;
class SamplesPanel;

class RunMonitor : public QWidget {
    Q_OBJECT
  public:
    explicit RunMonitor(QWidget* parent = nullptr);
    // Cancels the sources and returns at once, whatever the disk or the network does.
    ~RunMonitor() override;

    // Adds a run to the monitor (several runs are overlaid); returns its index.
    int add_run(const QString& name);
    int run_count() const { return model_.run_count(); }
    const RunModel& model() const { return model_; }
    const RunSeries& series(int run) const { return model_.series(run); }
    const RunProgress& progress(int run) const { return model_.progress(run); }

    // Applies events in seq order to run `run` (GUI thread). Charts redraw on the next frame.
    void apply_events(int run, const std::vector<Event>& events);
    // A run of the project: its stored events, read in the background and applied in slices
    // (loading() until all are in). Returns the run index.
    int add_store_run(store::Project& project, std::int64_t run_id, const QString& name);
    // Whether a run of the project (add_store_run) is shown here.
    bool shows_store_run(std::int64_t run_id) const;
    // True while stored events of a run are still being read.
    bool loading() const;
    // Follows an events.jsonl as it grows (read in the background every `interval_ms`).
    int follow_file(const std::filesystem::path& events_jsonl, const QString& name,
                    int interval_ms = 500);
    // Follows a job of an agent live (SSE, reconnecting) after `after_seq`; `on_new` (GUI
    // thread) receives each batch, e.g. to keep it in the project. Events of the stream wait
    // until the run's stored events are in.
    void follow_remote(int run, const net::RemoteEndpoint& endpoint, const QString& job_id,
                       std::int64_t after_seq,
                       std::function<void(const std::vector<Event>&)> on_new = {});

    // Where run `run`'s files are read from (validation report, sample pictures): a folder of
    // this computer, e.g. the copy kept beside the project (run_files.h), instead of its agent.
    void set_run_place(int run, const RunPlace& place);
    const RunPlace& run_place(int run) const {
        return links_.at(static_cast<std::size_t>(run)).place;
    }
    // The agent job that Pause / Resume / Cancel act on (the buttons are disabled without one).
    void set_remote_job(const net::RemoteEndpoint& endpoint, const QString& job_id);
    // Sends "pause", "resume" or "cancel" in the background; the answer lands in the log.
    void request(const QString& action);

    QStringList metric_names() const { return model_.metric_names(); }
    void set_metric_shown(const QString& metric, bool shown);
    QStringList shown_metrics() const;
    RunChart* chart(const QString& metric) const;

    void set_smoothing(double weight);
    void set_log_y(bool on);
    void set_x_axis(XAxis axis);

    // Redraws now instead of on the next frame (tests, export).
    void redraw_now();
    QString progress_text() const;
    QString progress_bar_text() const;  // what the bar shows: "42%", or "queued" before a step
    QString log_text() const;
    // Writes every shown chart as <folder>/<metric>.png and .csv; returns the files written.
    QStringList export_all(const QString& folder);

    // A validation report of run `run` (the JSON of a run's val_metrics.json); its panels show
    // what it holds. InputError when it is malformed.
    void set_validation_report(int run, const Json& report);
    // The panels (null until their data arrived); they show the last run added.
    PerClassTable* per_class_table() const { return per_class_; }
    ConfusionMatrixPanel* confusion_panel() const { return confusion_; }
    QTabWidget* panels() const { return tabs_; }  // charts, samples, validation panels, log
    PrCurvePanel* pr_curve_panel() const { return pr_curves_; }
    SamplesPanel* samples_panel() const { return samples_; }

  signals:
    void request_finished(const QString& action, bool ok, const QString& message);
    // A validation report of run `run` was fetched and drawn.
    void validation_loaded(int run);
    // A confusion cell (predicted, truth) or a per-class row (cls) was clicked: the images
    // behind it, for project run `store_run`.
    void drill_down_requested(std::int64_t store_run, DrillFilter filter);
    // The per-class table's "Metrics by tag…".
    void tag_metrics_requested(std::int64_t store_run);

  private:
    enum class Fetch { Idle, Wanted, Busy, Done };
    // What the view keeps per run besides the model: its sources and where its job folder is.
    struct RunLink {
        std::vector<std::unique_ptr<RunSource>> sources;
        RunSource* stored = nullptr;  // the project's events, while they are read
        std::vector<Event> held;      // live events that wait for the stored ones
        RunPlace place;
        Fetch validation_fetch = Fetch::Idle;
        std::int64_t store_run = -1;  // the project's run id (add_store_run), -1 for others
    };
    RunLink& link(int run) { return links_.at(static_cast<std::size_t>(run)); }
    // Connects and starts a source of run `run`.
    void add_source(int run, std::unique_ptr<RunSource> source,
                    std::function<void(const std::vector<Event>&)> on_new = {});
    void update_metric_list();
    void update_progress();
    void rebuild_charts();
    void set_buttons();
    // Fetches the run's validation report in the background once it is wanted and the run has
    // a place (an agent job or a job folder).
    void fetch_validation(int run);
    void update_eval_panels();
    // Samples into the Samples tab; their pictures (artifacts) load in the background.
    void add_samples(int run, const RunChanges& changes);
    void load_sample_image(int run, const std::string& artifact);
    void show_panel(QWidget* panel, const QString& title);

    RunModel model_;
    std::vector<RunLink> links_;
    std::vector<std::int64_t> store_runs_;  // the project runs added with add_store_run
    std::map<QString, RunChart*> charts_;
    QStringList shown_;
    bool dirty_ = false;
    bool metrics_dirty_ = false;
    bool eval_dirty_ = false;

    RunPlace control_;  // the agent job of Pause / Resume / Cancel

    QListWidget* metric_list_ = nullptr;
    QWidget* chart_area_ = nullptr;
    QGridLayout* chart_grid_ = nullptr;
    QSlider* smoothing_ = nullptr;
    QLabel* smoothing_label_ = nullptr;
    QCheckBox* log_y_ = nullptr;
    QComboBox* x_axis_ = nullptr;
    QProgressBar* progress_bar_ = nullptr;
    QLabel* progress_label_ = nullptr;
    QLabel* state_label_ = nullptr;
    QLabel* alarm_banner_ = nullptr;
    QPushButton* pause_ = nullptr;
    QPushButton* resume_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QPlainTextEdit* log_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    PerClassTable* per_class_ = nullptr;
    ConfusionMatrixPanel* confusion_ = nullptr;
    PrCurvePanel* pr_curves_ = nullptr;
    SamplesPanel* samples_ = nullptr;
    QTimer* frame_timer_ = nullptr;
};

}  // namespace crucible::ui
