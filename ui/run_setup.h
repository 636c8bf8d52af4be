#pragma once
// Run setup: pick a task (from the schemas the worker or the agent publish), fill the generic
// options form, pick a dataset and a server, load or save presets, and see the equivalent
// `crucible train` command (copyable). "Create run" stores a draft run in the project with the
// resolved options, so the run is reproducible and shows up in the project tree. The device row
// lists the chosen server's GPUs with live free memory (ui/gpu_picker.h); the choice goes into
// the submit's `gpus` and, for a task whose options have a `device`, into that option. When the
// chosen server's agent has peers, they are offered too (ui/peer_picker.h): one run over
// several servers.
#include <QString>
#include <QWidget>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/base/json.h"
#include "core/net/api_client.h"
#include "core/net/remote_config.h"
#include "core/store/run_store.h"
#include "ui/memory_check.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QScrollArea;

namespace crucible::ui {

class GpuPicker;
class OptionsForm;
class PeerPicker;

class RunSetupView : public QWidget {
    Q_OBJECT
  public:
    // `tasks`: an array of task schemas (the "tasks" of `crucible-worker describe`).
    RunSetupView(store::Project* project, const Json& tasks, QWidget* parent = nullptr);

    int task_count() const;
    bool select_task(const QString& task_id);
    QString current_task() const;
    OptionsForm* form() const { return form_; }
    GpuPicker* gpu_picker() const { return gpus_; }
    PeerPicker* peer_picker() const { return peers_; }
    QString command_line() const;
    QString error_text() const;
    // What the upload of a submit under way says ("uploading … MB · MB/s · ETA"), empty when
    // none; and its Cancel (the run goes back to a draft; submitting again resumes the upload).
    QString upload_text() const;
    void cancel_upload();
    // Stores a draft run; returns its id, or -1 with error_text() set.
    std::int64_t create_run(const QString& name = {});
    void copy_command() const;
    // Creates the run and submits it to the chosen server (POST /v1/jobs through the core/net
    // client, in the background); on success the run is "queued" with the agent's job id and
    // run_submitted is emitted. Returns the run id or -1.
    std::int64_t submit(const QString& name = {});
    // Picks the server by its name in the registry; "" is this computer.
    void select_server(const QString& name);
    // The form filled from an existing run (Clone…): its task, options, server, the server's
    // peers it also trained on (ticked when the agent lists them) and dataset (the
    // dataset's current version: a clone trains on the labels as they are now). False when this
    // studio does not know the run's task.
    bool load_setup(const store::RunSetup& setup, const QString& name);
    // The private local agent ("This computer"), when it runs; submit then goes there.
    void set_local_endpoint(const net::RemoteEndpoint& endpoint);
    // How the memory check runs the command line (the main window runs the `crucible` beside
    // the studio); without one there is no check.
    void set_dry_runner(MemoryCheck::DryRunner runner);
    MemoryCheck* memory_check() const { return memory_; }
    // Checks the run as it is set up now, without the pause for typing.
    void check_memory_now();
    // Asks the person whether to submit a run that will not fit; true submits. The default is
    // a warning dialog.
    void set_confirm(std::function<bool(const QString& question)> confirm) {
        confirm_ = std::move(confirm);
    }

  signals:
    void run_created(std::int64_t run_id);
    void run_submitted(std::int64_t run_id, const QString& job_id);
    void submit_failed(const QString& message);

  private:
    void fill_dataset_picker();
    void rebuild_form();
    void update_server_browser();
    // The chosen remote server; none for "This computer".
    std::optional<net::RemoteEntry> selected_server() const;
    // The registry as read when the view was made: the list the server choice offers.
    std::vector<net::RemoteEntry> servers_;
    void update_command();
    void reload_presets();
    // The picker asks the agent of the chosen server (or the local agent for "This computer").
    void update_gpu_endpoint();
    // The picker's GPU / CPU choice into the form's `device` option, and back.
    void device_to_form();
    void device_from_form();

    store::Project* project_;
    Json tasks_;
    net::RemoteEndpoint local_;
    bool has_local_ = false;
    QPushButton* submit_ = nullptr;
    bool submitting_ = false;  // one submit at a time: no double submit while uploads run
    // The upload of the submit under way: progress from the uploading thread, shown here.
    void show_upload(const net::UploadProgress& progress);
    std::shared_ptr<std::atomic<bool>> cancel_upload_;
    std::chrono::steady_clock::time_point upload_started_;
    std::uint64_t upload_first_done_ = 0;  // bytes already there when it (re)started
    QWidget* upload_row_ = nullptr;
    QProgressBar* upload_bar_ = nullptr;
    QLabel* upload_label_ = nullptr;
    // A detection dataset picked in the Dataset list trains from its snapshot
    // (store::snapshot_dataset: the labels as the studio shows them), written in the background
    // and put into the form's `data` option; a run cannot be created while it is being written.
    void dataset_to_form();
    int snapshot_generation_ = 0;
    bool snapshot_busy_ = false;
    // The snapshot wanted (dataset and version) and, once written, its data.yaml.
    std::int64_t snapshot_dataset_ = -1;
    std::string snapshot_version_;
    QString snapshot_path_;
    // Submit is offered with somewhere to submit to and no submit under way.
    void update_submit_button();
    // The run as the form has it, on the chosen GPU, into the memory check.
    void update_memory_check();
    // The memory of the GPU the run will get: the one picked, else the smallest whole GPU the
    // agent may assign; 0 with no GPU chosen or none known.
    double chosen_gpu_gib() const;
    MemoryCheck* memory_ = nullptr;
    std::function<bool(const QString&)> confirm_;
    OptionsForm* form_ = nullptr;
    QComboBox* task_ = nullptr;
    QComboBox* dataset_ = nullptr;
    QComboBox* server_ = nullptr;
    QComboBox* preset_ = nullptr;
    GpuPicker* gpus_ = nullptr;
    PeerPicker* peers_ = nullptr;  // other servers for the same run
    QLineEdit* name_ = nullptr;
    QLineEdit* command_ = nullptr;
    QLabel* error_ = nullptr;
    QScrollArea* scroll_ = nullptr;
};

}  // namespace crucible::ui
