#include "ui/run_setup.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>
#include <algorithm>
#include <optional>

#include "core/base/file_io.h"
#include "core/base/job_state.h"
#include "core/net/job_inputs.h"
#include "core/store/dataset_store.h"
#include "core/store/run_store.h"
#include "ui/background.h"
#include "ui/gpu_picker.h"
#include "ui/options_form.h"
#include "ui/peer_picker.h"
#include "ui/run_model.h"
#include "ui/server_access.h"
#include "ui/server_file_dialog.h"

namespace crucible::ui {

namespace {
QString qs(const std::string& s) {
    return QString::fromStdString(s);
}
}  // namespace

RunSetupView::RunSetupView(store::Project* project, const Json& tasks, QWidget* parent)
    : QWidget(parent), project_(project), tasks_(tasks.is_array() ? tasks : Json::array()) {
    auto* outer = new QVBoxLayout(this);
    auto* top = new QFormLayout;
    task_ = new QComboBox(this);
    task_->setObjectName(QStringLiteral("task"));
    for (const auto& t : tasks_) {
        const std::string id = t.value("task", std::string());
        const std::string title = t.value("title", id);
        task_->addItem(qs(title + " (" + id + ")"), qs(id));
    }
    name_ = new QLineEdit(this);
    name_->setPlaceholderText(tr("run name (optional)"));
    dataset_ = new QComboBox(this);
    dataset_->setObjectName(QStringLiteral("dataset"));
    server_ = new QComboBox(this);
    server_->addItem(tr("This computer"), QString());
    std::string servers_error;
    try {
        servers_ = list_servers();
        for (const auto& s : servers_)
            server_->addItem(qs(s.name + " (" + s.url + ")"), qs(s.name));
    } catch (const std::exception& e) {
        servers_error = e.what();  // shown once the error line exists
    }
    auto* preset_row = new QHBoxLayout;
    preset_ = new QComboBox(this);
    auto* save_preset = new QPushButton(tr("Save preset…"), this);
    preset_row->addWidget(preset_, 1);
    preset_row->addWidget(save_preset);
    top->addRow(tr("Task"), task_);
    top->addRow(tr("Name"), name_);
    top->addRow(tr("Dataset"), dataset_);
    top->addRow(tr("Server"), server_);
    gpus_ = new GpuPicker(this);
    top->addRow(tr("Device"), gpus_);
    peers_ = new PeerPicker(this);
    top->addRow(tr("Also on"), peers_);
    top->setRowVisible(peers_, false);  // until the agent names peers
    connect(peers_, &PeerPicker::refreshed, this,
            [this, top] { top->setRowVisible(peers_, !peers_->peers().isEmpty()); });
    auto* memory_label = new QLabel(this);
    memory_ = new MemoryCheck(memory_label, this);
    top->addRow(QString(), memory_label);
    top->addRow(tr("Preset"), preset_row);
    outer->addLayout(top);

    scroll_ = new QScrollArea(this);
    scroll_->setWidgetResizable(true);
    outer->addWidget(scroll_, 1);

    error_ = new QLabel(this);
    error_->setStyleSheet(QStringLiteral("color:#d32f2f"));
    error_->setWordWrap(true);
    if (!servers_error.empty()) error_->setText(qs(servers_error));
    outer->addWidget(error_);
    // The upload of a submit: bytes, rate, ETA and its Cancel (shown while one runs).
    upload_row_ = new QWidget(this);
    auto* upload = new QHBoxLayout(upload_row_);
    upload->setContentsMargins(0, 0, 0, 0);
    upload_bar_ = new QProgressBar(upload_row_);
    upload_bar_->setRange(0, 1000);
    upload_label_ = new QLabel(upload_row_);
    upload_label_->setObjectName(QStringLiteral("upload"));
    auto* cancel_upload_button = new QPushButton(tr("Cancel upload"), upload_row_);
    cancel_upload_button->setObjectName(QStringLiteral("cancel_upload"));
    upload->addWidget(upload_bar_, 1);
    upload->addWidget(upload_label_);
    upload->addWidget(cancel_upload_button);
    upload_row_->hide();
    outer->addWidget(upload_row_);
    connect(cancel_upload_button, &QPushButton::clicked, this, &RunSetupView::cancel_upload);
    auto* command_row = new QHBoxLayout;
    command_ = new QLineEdit(this);
    command_->setReadOnly(true);
    command_->setObjectName(QStringLiteral("command"));
    auto* copy = new QPushButton(tr("Copy"), this);
    auto* defaults = new QPushButton(tr("Defaults"), this);
    auto* create = new QPushButton(tr("Create run"), this);
    auto* submit_button = new QPushButton(tr("Submit to server"), this);
    submit_button->setObjectName(QStringLiteral("submit"));
    create->setObjectName(QStringLiteral("create_run"));
    create->setDefault(true);
    command_row->addWidget(new QLabel(tr("Command"), this));
    command_row->addWidget(command_, 1);
    command_row->addWidget(copy);
    command_row->addWidget(defaults);
    command_row->addWidget(create);
    command_row->addWidget(submit_button);
    outer->addLayout(command_row);

    connect(task_, &QComboBox::currentIndexChanged, this, [this] { rebuild_form(); });
    connect(copy, &QPushButton::clicked, this, [this] { copy_command(); });
    connect(defaults, &QPushButton::clicked, this, [this] {
        if (form_) form_->reset_to_defaults();
    });
    connect(create, &QPushButton::clicked, this, [this] { create_run(); });
    connect(submit_button, &QPushButton::clicked, this, [this] { submit(); });
    submit_ = submit_button;
    connect(server_, &QComboBox::currentIndexChanged, this, [this] { update_submit_button(); });
    connect(dataset_, &QComboBox::currentIndexChanged, this, [this] { dataset_to_form(); });
    connect(server_, &QComboBox::currentIndexChanged, this, [this] { update_server_browser(); });
    connect(server_, &QComboBox::currentIndexChanged, this, [this] { update_gpu_endpoint(); });
    connect(gpus_, &GpuPicker::choice_changed, this, [this] { device_to_form(); });
    connect(gpus_, &GpuPicker::choice_changed, this, [this] { update_memory_check(); });
    connect(gpus_, &GpuPicker::refreshed, this, [this] { update_memory_check(); });
    update_submit_button();
    update_gpu_endpoint();
    connect(preset_, &QComboBox::activated, this, [this](int i) {
        if (!form_ || i <= 0 || !project_) return;
        auto presets = store::list_presets(*project_, current_task().toStdString());
        auto it = presets.find(preset_->itemText(i).toStdString());
        if (it != presets.end()) form_->set_values(it->second);
    });
    connect(save_preset, &QPushButton::clicked, this, [this] {
        if (!form_ || !project_) return;
        bool ok = false;
        QString name = QInputDialog::getText(this, tr("Save preset"), tr("Preset name"),
                                             QLineEdit::Normal, QString(), &ok);
        if (!ok || name.trimmed().isEmpty()) return;
        try {
            store::save_preset(*project_, current_task().toStdString(),
                               name.trimmed().toStdString(), form_->changed_values());
            reload_presets();
        } catch (const std::exception& e) {
            error_->setText(QString::fromUtf8(e.what()));
        }
    });
    if (tasks_.empty())
        error_->setText(
            tr("No task schemas: start a server or install crucible-worker next to "
               "the studio."));
    rebuild_form();
}

int RunSetupView::task_count() const {
    return task_->count();
}

bool RunSetupView::select_task(const QString& task_id) {
    int i = task_->findData(task_id);
    if (i < 0) return false;
    task_->setCurrentIndex(i);
    return true;
}

QString RunSetupView::current_task() const {
    return task_->currentData().toString();
}

void RunSetupView::fill_dataset_picker() {
    // The datasets the task trains on: a task names its kind ("detection", "chat", ...); a
    // schema from an older agent names none, and then every dataset is offered.
    const int i = task_->currentIndex();
    const std::string kind = i >= 0 && i < static_cast<int>(tasks_.size())
                                 ? tasks_[static_cast<std::size_t>(i)].value("dataset_kind", "*")
                                 : std::string("*");
    const qlonglong picked = dataset_->currentData().toLongLong();
    QSignalBlocker block(dataset_);
    dataset_->clear();
    dataset_->addItem(tr("(none)"), QVariant::fromValue<qlonglong>(-1));
    if (project_) {
        try {
            for (const auto& d : store::list_datasets(*project_)) {
                if (kind != "*" && d.kind != kind) continue;
                const auto count = d.kind == "chat" ? d.chat_records : d.images;
                dataset_->addItem(
                    qs(d.name) +
                        (d.kind == "chat" ? tr(" · %1 records") : tr(" · %1 images")).arg(count),
                    QVariant::fromValue<qlonglong>(d.id));
            }
        } catch (const std::exception& e) {
            error_->setText(QString::fromUtf8(e.what()));
        }
    }
    const int keep = dataset_->findData(picked);
    dataset_->setCurrentIndex(keep > 0 ? keep : (dataset_->count() > 1 ? 1 : 0));
}

void RunSetupView::rebuild_form() {
    const int i = task_->currentIndex();
    fill_dataset_picker();
    if (scroll_->widget()) delete scroll_->takeWidget();
    form_ = nullptr;
    if (i < 0 || i >= static_cast<int>(tasks_.size())) {
        update_command();
        return;
    }
    try {
        form_ = new OptionsForm(tasks_[static_cast<std::size_t>(i)], scroll_);
        scroll_->setWidget(form_);
        connect(form_, &OptionsForm::changed, this, &RunSetupView::update_command);
        connect(form_, &OptionsForm::changed, this, &RunSetupView::device_from_form);
        device_to_form();
        update_server_browser();
        error_->clear();
        dataset_to_form();
    } catch (const std::exception& e) {
        error_->setText(tr("bad schema: %1").arg(QString::fromUtf8(e.what())));
    }
    reload_presets();
    update_command();
}

void RunSetupView::reload_presets() {
    preset_->clear();
    preset_->addItem(tr("(choose a preset)"));
    if (!project_ || !form_) return;
    for (const auto& [name, _] : store::list_presets(*project_, current_task().toStdString()))
        preset_->addItem(qs(name));
}

void RunSetupView::update_command() {
    if (!form_) {
        command_->clear();
        return;
    }
    QStringList errors;
    form_->changed_values(&errors);
    command_->setText(form_->command_line());
    error_->setText(errors.join(QLatin1Char('\n')));
    update_memory_check();
}

void RunSetupView::set_dry_runner(MemoryCheck::DryRunner runner) {
    memory_->set_dry_runner(std::move(runner));
    update_memory_check();
}

void RunSetupView::check_memory_now() {
    update_memory_check();
    memory_->check_now();
}

double RunSetupView::chosen_gpu_gib() const {
    if (!gpus_->known() || !gpus_->use_gpu()) return 0;
    const auto picked = gpus_->submit_gpu_list();
    std::uint64_t smallest = 0;
    for (const auto& g : gpus_->listing().gpus) {
        if (g.mig_enabled ||
            (!picked.empty() && std::find(picked.begin(), picked.end(), g.index) == picked.end()))
            continue;
        if (smallest == 0 || g.memory_total < smallest) smallest = g.memory_total;
    }
    return static_cast<double>(smallest) / static_cast<double>(1ull << 30);
}

void RunSetupView::update_memory_check() {
    if (!memory_) return;
    QStringList errors;
    if (form_) form_->changed_values(&errors);
    memory_->request(form_ && errors.isEmpty() ? form_->train_arguments() : QStringList(),
                     chosen_gpu_gib());
}

QString RunSetupView::command_line() const {
    return command_->text();
}

QString RunSetupView::error_text() const {
    return error_->text();
}

void RunSetupView::copy_command() const {
    QApplication::clipboard()->setText(command_->text());
}

void RunSetupView::dataset_to_form() {
    const qlonglong id = dataset_->currentData().toLongLong();
    const OptionSpec* data_option = form_ ? form_->schema().find("data") : nullptr;
    auto drop_pending = [this] {
        ++snapshot_generation_;  // an answer for an earlier pick is dropped
        snapshot_busy_ = false;
        snapshot_dataset_ = -1;
    };
    if (!project_ || id < 0 || !data_option || data_option->type != OptionType::Path)
        return drop_pending();
    store::DatasetInfo info;
    try {
        info = store::get_dataset(*project_, id);
    } catch (const std::exception& e) {
        error_->setText(QString::fromUtf8(e.what()));
        return drop_pending();
    }
    // Caption folders are not project datasets: their path is typed.
    if (info.kind != "detection" && info.kind != "chat") return drop_pending();
    auto show = [this](const QString& path) {
        form_->set_values({{"data", path.toStdString()}});
        update_command();
    };
    if (snapshot_dataset_ == id && snapshot_version_ == info.version_hash) {
        if (!snapshot_busy_) show(snapshot_path_);
        return;  // written already, or being written: not started twice
    }
    ++snapshot_generation_;
    snapshot_dataset_ = id;
    snapshot_version_ = info.version_hash;
    snapshot_path_.clear();
    snapshot_busy_ = true;
    const int generation = snapshot_generation_;
    const auto project_file = project_->path();
    run_in_background<std::string>(
        this,
        [project_file, id] {
            // Its own read-only connection: the GUI thread keeps using the project's.
            return path_to_utf8(
                store::snapshot_dataset(*store::Project::open_for_reading(project_file), id));
        },
        [this, generation, show](std::string path, QString error) {
            if (generation != snapshot_generation_) return;
            snapshot_busy_ = false;
            if (!error.isEmpty()) {
                snapshot_dataset_ = -1;  // the next pick or run tries again
                error_->setText(tr("dataset snapshot not written: %1").arg(error));
                return;
            }
            snapshot_path_ = qs(path);
            show(snapshot_path_);
        });
}

std::int64_t RunSetupView::create_run(const QString& name) {
    if (!form_ || !project_) {
        error_->setText(tr("no task or no project"));
        return -1;
    }
    // The labels the run trains on are the ones the studio shows now: a picked dataset edited
    // since its snapshot is written again first.
    dataset_to_form();
    if (snapshot_busy_) {
        error_->setText(tr("the dataset's snapshot is being written; create the run in a moment"));
        return -1;
    }
    try {
        store::RunSetup setup;
        setup.task = current_task().toStdString();
        setup.options = form_->resolved();
        QString n = name.isEmpty() ? name_->text().trimmed() : name;
        if (n.isEmpty()) n = current_task() + QStringLiteral(" run");
        setup.name = n.toStdString();
        const qlonglong ds = dataset_->currentData().toLongLong();
        if (ds >= 0) setup.dataset_id = ds;
        setup.server = server_->currentData().toString().toStdString();
        for (const QString& peer : peers_->chosen())
            setup.peers.push_back(peer.toStdString());
        const auto id = store::create_run(*project_, setup);
        error_->clear();
        emit run_created(id);
        return id;
    } catch (const std::exception& e) {
        error_->setText(QString::fromUtf8(e.what()));
        return -1;
    }
}

}  // namespace crucible::ui

namespace crucible::ui {

// Path options of a run for a remote server can also be picked on that server (/v1/fs).
std::optional<net::RemoteEntry> RunSetupView::selected_server() const {
    const std::string name = server_->currentData().toString().toStdString();
    for (const auto& s : servers_)
        if (s.name == name) return s;
    return std::nullopt;  // "This computer"
}

void RunSetupView::update_server_browser() {
    if (!form_) return;
    const auto server = selected_server();
    if (!server) {
        form_->set_server_browser({});
        return;
    }
    form_->set_server_browser([this, info = *server](QWidget* parent) -> QString {
        try {
            return ServerFileDialog::pick(net::endpoint_for(info), parent);
        } catch (const std::exception& e) {
            error_->setText(QString::fromUtf8(e.what()));
            return {};
        }
    });
}

void RunSetupView::select_server(const QString& name) {
    server_->setCurrentIndex(std::max(0, server_->findData(name)));
}

bool RunSetupView::load_setup(const store::RunSetup& setup, const QString& name) {
    if (!select_task(qs(setup.task))) {
        error_->setText(tr("this studio does not know the task %1 (connect the server that ran "
                           "it)")
                            .arg(qs(setup.task)));
        return false;
    }
    if (form_) form_->set_values(setup.options);
    select_server(qs(setup.server));
    QStringList peers;
    for (const auto& peer : setup.peers)
        peers << qs(peer);
    peers_->choose(peers);
    name_->setText(name);
    // After the options: a dataset still in the project replaces `data` with its snapshot.
    const int picked = setup.dataset_id
                           ? dataset_->findData(QVariant::fromValue<qlonglong>(*setup.dataset_id))
                           : -1;
    if (picked > 0) dataset_->setCurrentIndex(picked);
    dataset_to_form();
    update_command();
    return true;
}

void RunSetupView::update_submit_button() {
    submit_->setEnabled(!submitting_ &&
                        (has_local_ || !server_->currentData().toString().isEmpty()));
    submit_->setText(submitting_ ? tr("Submitting…") : tr("Submit to server"));
}

std::int64_t RunSetupView::submit(const QString& name) {
    if (submitting_) return -1;  // the button is disabled; a second call (a shortcut) too
    if (server_->currentData().toString().isEmpty() && !has_local_) {
        error_->setText(tr("choose a server to submit to (or run it here with the command)"));
        return -1;
    }
    const auto server = selected_server();
    if (!server && !has_local_) return -1;
    if (const auto& v = memory_->verdict(); v && !v->fits && gpus_->use_gpu()) {
        const QString question =
            tr("This run is predicted to need %1 GiB of GPU memory at its peak; the chosen GPU "
               "has %2 GiB. It will likely fail with out-of-memory (on Windows the driver may "
               "instead spill into system memory and run many times slower). Submit anyway?")
                .arg(v->predicted_gib, 0, 'f', 1)
                .arg(v->capacity_gib, 0, 'f', 1);
        const bool go = confirm_ ? confirm_(question)
                                 : QMessageBox::warning(this, tr("Run will not fit"), question,
                                                        QMessageBox::Yes | QMessageBox::No,
                                                        QMessageBox::No) == QMessageBox::Yes;
        if (!go) {
            error_->setText(tr("not submitted: the run will not fit the chosen GPU"));
            return -1;
        }
    }
    const std::int64_t run_id = create_run(name);
    if (run_id < 0) return -1;
    const store::RunInfo run = store::get_run(*project_, run_id);
    net::SubmitRequest request;
    request.task = run.setup.task;
    request.options = run.setup.options;
    request.name = run.setup.name;
    // The agent assigns a free GPU unless the person picked one; it is told whether the job
    // wants one (unknown: its default).
    if (const auto gpus = gpus_->submit_gpus()) request.gpus = *gpus;
    request.gpu = gpus_->submit_gpu_list();
    request.servers = peers_->submit_servers();
    net::RemoteEndpoint endpoint;
    try {
        endpoint = server ? net::endpoint_for(*server) : local_;
    } catch (const std::exception& e) {
        error_->setText(QString::fromUtf8(e.what()));
        return -1;
    }
    store::update_run_state(*project_, run_id, "submitting");
    submitting_ = true;
    update_submit_button();
    // A remote server cannot read this computer's files: local files and folders named by path
    // options (pretrained weights, datasets) are uploaded first. The local agent reads them here.
    const Json schema = server ? net::find_task_schema(tasks_, run.setup.task) : Json();
    cancel_upload_ = std::make_shared<std::atomic<bool>>(false);
    upload_started_ = std::chrono::steady_clock::now();
    upload_first_done_ = 0;
    upload_label_->clear();
    upload_bar_->setValue(0);
    // Progress comes from the uploading thread: a few updates a second reach the GUI thread.
    auto progress =
        [view = QPointer<RunSetupView>(this), cancel = cancel_upload_,
         last = std::chrono::steady_clock::time_point()](const net::UploadProgress& p) mutable {
            if (*cancel) throw net::UploadCanceled();
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(100) && p.done < p.total) return;
            last = now;
            QMetaObject::invokeMethod(view, [view, p] {
                if (view) view->show_upload(p);
            });
        };
    run_in_background<net::JobInfo>(
        this,
        [endpoint, request, schema, progress]() mutable {
            net::ApiClient client(endpoint);
            request.options = net::upload_local_inputs(client, schema, request.options, progress);
            return client.submit(request);
        },
        [this, run_id](net::JobInfo job, QString error) {
            submitting_ = false;
            update_submit_button();
            upload_row_->hide();
            if (error == QString::fromUtf8(net::UploadCanceled().what())) {
                error_->setText(
                    tr("upload canceled: the run is a draft again; Submit continues "
                       "the upload where it stopped"));
                store::update_run_state(*project_, run_id, "draft");
                emit submit_failed(error);
                return;
            }
            const std::string job_id = error.isEmpty() ? job.id : std::string();
            if (!error.isEmpty() || job_id.empty()) {
                const QString message =
                    error.isEmpty() ? tr("the server answered without a job id") : error;
                error_->setText(tr("not submitted: %1").arg(message));
                store::update_run_state(*project_, run_id, "draft");
                emit submit_failed(message);
                return;
            }
            store::update_run_state(*project_, run_id, job_state_name(job.state), job_id);
            emit run_submitted(run_id, qs(job_id));
        });
    return run_id;
}

}  // namespace crucible::ui

namespace crucible::ui {

QString RunSetupView::upload_text() const {
    return upload_row_->isVisible() ? upload_label_->text() : QString();
}

void RunSetupView::cancel_upload() {
    if (cancel_upload_) *cancel_upload_ = true;
}

void RunSetupView::show_upload(const net::UploadProgress& p) {
    if (!submitting_ || p.total == 0) return;
    const auto mb = [](std::uint64_t bytes) { return static_cast<double>(bytes) / 1e6; };
    if (!upload_row_->isVisible()) upload_first_done_ = p.done;  // resumed from here
    upload_row_->show();
    upload_bar_->setValue(
        static_cast<int>(1000.0 * static_cast<double>(p.done) / static_cast<double>(p.total)));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - upload_started_).count();
    const double rate = seconds > 0.2 ? static_cast<double>(p.done - upload_first_done_) / seconds
                                      : 0.0;  // bytes/s of this attempt
    QString text = tr("uploading %1: %2 / %3 MB")
                       .arg(QFileInfo(qs(p.file)).fileName())
                       .arg(mb(p.done), 0, 'f', 1)
                       .arg(mb(p.total), 0, 'f', 1);
    if (rate > 0)
        text += tr(" · %1 MB/s · ETA %2")
                    .arg(mb(static_cast<std::uint64_t>(rate)), 0, 'f', 1)
                    .arg(format_duration(static_cast<double>(p.total - p.done) / rate));
    text += tr(" · %1/%2 files").arg(p.files_done).arg(p.files);
    upload_label_->setText(text);
}

void RunSetupView::set_local_endpoint(const net::RemoteEndpoint& endpoint) {
    local_ = endpoint;
    has_local_ = !endpoint.url.empty();
    update_submit_button();
    update_gpu_endpoint();
}

void RunSetupView::update_gpu_endpoint() {
    const auto server = selected_server();
    std::optional<net::RemoteEndpoint> endpoint;
    if (!server) {
        if (has_local_) endpoint = local_;
    } else {
        try {
            endpoint = net::endpoint_for(*server);
        } catch (const std::exception& e) {
            error_->setText(QString::fromUtf8(e.what()));
        }
    }
    gpus_->set_endpoint(endpoint);
    // The local agent ("This computer") has no peers; a server's agent may.
    peers_->set_endpoint(server ? endpoint : std::nullopt);
}

namespace {
constexpr const char* kDeviceOption = "device";  // the engine's device option (cpu, 0, ...)
}  // namespace

void RunSetupView::device_to_form() {
    if (!form_) return;
    const OptionSpec* spec = form_->schema().find(kDeviceOption);
    if (!spec) return;
    const Json current = form_->values().value(kDeviceOption, Json());
    const bool is_cpu = current.is_string() && current.get<std::string>() == "cpu";
    if (gpus_->cpu_chosen() && !is_cpu)
        form_->set_values({{kDeviceOption, "cpu"}});
    else if (!gpus_->cpu_chosen() && is_cpu)
        form_->set_values({{kDeviceOption, spec->default_value}});
}

void RunSetupView::device_from_form() {
    if (!form_ || !form_->schema().find(kDeviceOption)) return;
    const Json current = form_->values().value(kDeviceOption, Json());
    const bool is_cpu = current.is_string() && current.get<std::string>() == "cpu";
    if (is_cpu != gpus_->cpu_chosen()) gpus_->choose_cpu(is_cpu);
}

}  // namespace crucible::ui
