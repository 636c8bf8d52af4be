#pragma once
// The studio's main window: the project tree (datasets, runs, servers, read from core/store),
// closable central tabs (dataset views, annotation editors, run setups, run monitors), a log
// console dock and a status bar (project, server connection, GPU summary). Recent projects,
// theme and window layout are kept with QSettings. Dropping a dataset folder on the window
// imports it in the background with progress and cancel. Everything works with the software
// renderer (no OpenGL widgets).
#include <QMainWindow>
#include <QPointer>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/base/json.h"
#include "core/net/api_client.h"
#include "core/net/remote_config.h"
#include "core/store/run_store.h"
#include "ui/annotation_editor.h"
#include "ui/annotation_store.h"
#include "ui/demo_project.h"
#include "ui/drill_down.h"
#include "ui/run_source.h"
#include "ui/theme.h"

class QLabel;
class QMenu;
class QTabWidget;
class QTreeWidget;
class QTreeWidgetItem;
class QDockWidget;

namespace crucible::store {
class Project;
}

namespace crucible::ui {

class LocalAgent;
class LogConsole;
class RunMonitor;
class DatasetView;
class RunSetupView;
class RunTableView;
class PredictPreview;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    // Tree item data roles: kind ("dataset", "run", "server") and row id (a server's name).
    static constexpr int kKindRole = Qt::UserRole + 1;
    static constexpr int kIdRole = Qt::UserRole + 2;

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Open / create a project file; on failure the error is shown in the log and false returned.
    bool open_project(const QString& file);
    bool new_project(const QString& file);
    void close_project();
    // The same, asking for the file first (File menu, welcome page).
    void new_project_asking();
    void open_project_asking();
    // A dataset folder chosen in a dialog; without a project, a new one is made for it first.
    void import_dataset_asking();
    // The demo project (ui/demo_project.h) in `folder` (default: the app's data folder), made
    // once, opened with its dataset and example run.
    bool open_demo(const QString& folder = {});
    // What the demo project is made with (the studio names the detection task; ui/ names none).
    void set_demo_options(const DemoOptions& options) { demo_options_ = options; }
    // The welcome page tab (shown by itself when no project is open).
    void show_welcome();
    store::Project* project() const { return project_.get(); }

    // Task schemas ("tasks" array of `crucible-worker describe` or /v1/info).
    void set_task_schemas(const Json& tasks);
    // `crucible-worker describe` of the worker next to the studio (its version, LibTorch and
    // CUDA runtime, for Help ▸ About); null when there is none.
    void set_worker_description(const Json& describe);
    // What Help ▸ About says: Crucible, Qt, the local worker's LibTorch and CUDA, the agent.
    QString about_text() const;
    // What Help ▸ Keyboard shortcuts lists: every menu shortcut, then the views' own keys.
    QString shortcuts_text() const;
    const Json& task_schemas() const { return tasks_; }

    QTreeWidget* project_tree() const { return tree_; }
    QTabWidget* tabs() const { return tabs_; }
    LogConsole* log_console() const { return log_; }
    QStringList recent_projects() const;
    QString status_text() const;

    RunMonitor* open_run(std::int64_t run_id);
    RunMonitor* open_runs(const std::vector<std::int64_t>& run_ids);
    RunMonitor* open_events_file(const QString& events_jsonl);
    DatasetView* open_dataset(std::int64_t dataset_id);
    AnnotationEditor* open_annotation(std::int64_t dataset_id, int image_index);
    RunSetupView* open_run_setup();
    // The project's runs as one table (one tab; activating it again brings it forward).
    RunTableView* open_run_table();

    // Imports a dataset folder or file in the background (progress dialog with cancel).
    void import_dataset(const QString& source);
    // Asks the server (by its name in the user's registry) for its info in the background;
    // updates the status bar.
    void check_server(const QString& name);
    // The status bar's entry for one server ("" removes it): every server checked shows there.
    void set_server_state(const QString& name, const QString& state);
    // Adds a server to the user's registry, the one `crucible remote` uses (token to the
    // SecretStore). An https server is probed first and its certificate fingerprint shown for
    // confirmation; returns true when it was added now (false: refused, canceled, or an https
    // server whose confirmation is still pending).
    bool add_server(const QString& name, const QString& url, const QString& token);
    void add_server_asking();  // name, URL and token asked in a dialog
    // Starts (or adopts, when one runs from before) the private crucible-agent of "This
    // computer"; it outlives the window while its runs train (local_agent.h).
    void start_local_agent(const QString& program = {});
    // Uses `agent` (not started yet) as this computer's agent (tests: a fake worker).
    void set_local_agent(LocalAgent* agent);
    LocalAgent* local_agent() const { return local_agent_; }

    void set_theme(Theme theme);
    Theme theme() const { return theme_; }
    void refresh_tree();
    // Server entries: a new token (asked in a dialog), or the entry and its token removed after
    // a confirmation. Both say what happened in the log.
    void change_server_token(const QString& name);
    // A server entry's new URL (asked in a dialog; an https one's certificate confirmed first, as
    // when it was added); its name and token stay.
    void change_server_url_asking(const QString& name);
    void remove_server_asking(const QString& name);
    // A run of the project removed after a confirmation, its monitor tabs closed first. Its
    // history goes in slices between turns of the event loop (state "deleting" meanwhile).
    void delete_run_asking(std::int64_t run_id);
    // Rows of history deleted per turn of the event loop.
    static constexpr std::int64_t kDeleteSlice = 20000;
    // Whether runs are still being deleted (tests).
    bool deleting_runs() const { return !deleting_runs_.empty(); }
    // A dataset removed from the project after a confirmation (its image files and runs stay;
    // runs keep the version they trained on), its view and editor tabs closed first.
    void delete_dataset_asking(std::int64_t dataset_id);
    // Closes the tabs that show the dataset (views and editors).
    void close_dataset_tabs(std::int64_t dataset_id);
    // The class editor of a dataset; its changes reach every open view and editor of it.
    void edit_classes(std::int64_t dataset_id);
    // The dataset's views and editors show the project's content again (after class edits).
    void reload_dataset(std::int64_t dataset_id);
    // Before editors close: when some have edits their datasets' label files lack, asks whether
    // to write them (Write / Don't write / Cancel); false on Cancel.
    bool settle_unwritten_labels(const std::vector<AnnotationEditor*>& editors);
    // Keeps a followed run's new events in the project; a status among them shows in the tree,
    // and an ended run's files are fetched beside the project (keep_run_files).
    void keep_events(std::int64_t run_id, const std::vector<Event>& events);
    // Fetches an ended run's files from its agent into store::run_files_folder in the
    // background (retried; once), then calls `then`; at once when they are there already.
    void keep_run_files(std::int64_t run_id, std::function<void()> then = {});
    // Save weights…: one of the run's weight files (fetched first when needed) copied where the
    // person says.
    void save_run_weights_asking(std::int64_t run_id);
    // Pre-label ▾ in an editor: the model asked for (a run of the dataset's best weights, or any
    // weights file), then the editor predicts with the command line next to the studio.
    void prelabel_asking(AnnotationEditor* editor, std::int64_t dataset_id,
                         AnnotationEditor::PrelabelScope scope);
    // The crucible command line the studio runs (predict preview, pre-labelling, drill-down):
    // the one beside the studio, unless set (tests run the build's).
    QString command_line() const;
    void set_command_line(const QString& program) { command_line_ = program; }
    // Runs the command line with `args` in the background; `done` gets whether it exited 0 and
    // its output. One that cannot start is said in the log, under `what`.
    void run_command_line(const QStringList& args, const QString& what,
                          std::function<void(bool ok, const QString& output)> done);
    // The same with its exit code: kCommandDidNotStart (the output then says why) or
    // kCommandCrashed when it did not exit normally.
    static constexpr int kCommandDidNotStart = -1, kCommandCrashed = -2;
    void start_command_line(const QStringList& args,
                            std::function<void(int exit_code, const QString& output)> done);
    // The run's best weights among its kept files (empty when it has none).
    static std::filesystem::path best_run_weights(const std::filesystem::path& folder);
    // "imgsz=N" when the run was set up with a size: predictions and exports use the run's.
    static QStringList run_size_args(const store::RunInfo& run);
    // Drill-down (a confusion cell, a class or a PR-curve point of a run's monitor): the run's
    // per-image report (made once beside the project by the command line next to the studio,
    // again when it is of an older version), in a view of the images behind it, worst first.
    void drill_down(std::int64_t run_id, const DrillFilter& filter);
    DrillDownView* open_drill_down(std::int64_t run_id, const std::filesystem::path& report_file,
                                   const DrillFilter& filter);
    // "Metrics by tag…": the same report's metrics per tag value; a row drills down to its images.
    void show_tag_metrics(std::int64_t run_id);
    TagMetricsView* open_tag_metrics(std::int64_t run_id, const std::filesystem::path& report_file);
    // The image in the dataset's editor with the model's predictions (at or above `conf`) drawn
    // over its labels.
    AnnotationEditor* open_image_with_predictions(std::int64_t dataset_id,
                                                  const data::ImageOutcome& image, double conf);
    // Export ONNX…: the run's best weights as an ONNX model at the run's size, where the person
    // says, re-scored on the run's dataset (crucible export detect format=onnx data=...); the
    // log says the file's size and both mAP50s, or why it was refused.
    void export_run_onnx_asking(std::int64_t run_id);
    void export_run_onnx(std::int64_t run_id, const QString& file);
    // Export metrics as CSV…: the runs' metrics (all runs when `run_ids` is empty) as tidy CSV in
    // a file the person names, and their per-class evaluations beside it (<name>_per_class.csv);
    // for spreadsheets and Power BI (core/store/tidy_csv.h).
    void export_runs_csv_asking(const std::vector<std::int64_t>& run_ids);
    // The same into `file` without asking; says in the log what it wrote. False on an error.
    bool export_runs_csv(const std::vector<std::int64_t>& run_ids, const QString& file);
    // A new run set up like this one (task, options, server, dataset), in a run setup tab.
    RunSetupView* clone_run(std::int64_t run_id);
    // Predict preview…: pictures chosen in a dialog, the run's weights fetched when needed.
    void predict_preview_asking(std::int64_t run_id);
    // The preview tab of `weights` on `images` (program: the crucible command line; empty: the
    // one next to the studio), started at once.
    PredictPreview* open_predict_preview(std::int64_t run_id,
                                         const std::vector<std::filesystem::path>& images,
                                         const std::filesystem::path& weights,
                                         const QString& program = {});
    void log(const QString& level, const QString& message);

  protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

  private:
    // Calls `then` with the run's per-image report once it exists and is of this version,
    // scoring the run's best weights on its dataset first when it is not (logged on failure).
    using PerImageReportUser =
        std::function<void(const std::filesystem::path& file, data::PerImageReport report)>;
    void with_per_image_report(std::int64_t run_id, PerImageReportUser then);
    DrillDownView* show_drill_down(std::int64_t run_id, data::PerImageReport report,
                                   const DrillFilter& filter);
    // The tag table of a read report; a row opens the drill-down of `report_file` again.
    TagMetricsView* show_tag_metrics(std::int64_t run_id, const std::filesystem::path& report_file,
                                     data::PerImageReport report);
    void build_menus();
    void add_recent(const QString& file);
    void rebuild_recent_menu();
    void on_tree_activated(QTreeWidgetItem* item);
    void compare_selected_runs();
    void refresh_run_tables();
    std::vector<AnnotationEditor*> annotation_editors() const;
    void delete_runs_in_slices();
    std::vector<std::int64_t> deleting_runs_;
    bool deletion_scheduled_ = false;
    // Follows every local run shown in a monitor through the local agent now up.
    void follow_local_runs();
    // Where a run of the project trains or trained: its agent's job (none when unreachable).
    std::optional<RunPlace> run_place(const store::RunInfo& run) const;
    // Before the window closes: runs training on this computer keep training (default) or are
    // paused, as the person chooses; false on Cancel.
    bool settle_local_runs();
    int add_tab(QWidget* widget, const QString& title);
    net::RemoteEndpoint endpoint_for(const net::RemoteEntry& server) const;
    // First contact with an https URL: its certificate's fingerprint shown, `trusted` called with
    // it when the person agrees; plain HTTP calls it at once with "". False when `url` is bad.
    bool with_trusted_fingerprint(const QString& url,
                                  std::function<void(const std::string&)> trusted);
    std::shared_ptr<DatasetContent> dataset_content(std::int64_t dataset_id);

    std::unique_ptr<store::Project> project_;
    Json worker_;  // `crucible-worker describe` without its tasks
    DemoOptions demo_options_;
    Json tasks_ = Json::array();
    Theme theme_ = Theme::Light;
    bool busy_ = false;
    std::map<std::int64_t, std::weak_ptr<DatasetContent>> contents_;

    QTreeWidget* tree_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    LogConsole* log_ = nullptr;
    QString command_line_;
    QDockWidget* log_dock_ = nullptr;
    QLabel* project_label_ = nullptr;
    QLabel* connection_label_ = nullptr;
    QLabel* gpu_label_ = nullptr;
    QMenu* recent_menu_ = nullptr;
    LocalAgent* local_agent_ = nullptr;
    // Monitors' runs of this computer's agent, and the agent URL each is followed through.
    struct LocalFollow {
        QPointer<RunMonitor> monitor;
        int index = 0;
        std::int64_t run_id = 0;
        std::string url;
    };
    std::vector<LocalFollow> local_follows_;
    std::set<std::int64_t> fetching_files_;     // runs whose files are being fetched
    std::map<QString, QString> server_states_;  // by server name, for the status bar
};

}  // namespace crucible::ui
