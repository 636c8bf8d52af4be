#include "ui/run_monitor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/job_state.h"
#include "core/store/run_store.h"
#include "ui/background.h"
#include "ui/eval_panels.h"
#include "ui/samples_panel.h"

namespace crucible::ui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

// Loss curves first, then quality metrics, then the rest: what a user looks at first.
int metric_rank(const QString& m) {
    if (m.startsWith(QStringLiteral("train/"))) return 0;
    if (m.startsWith(QStringLiteral("val/"))) return 1;
    if (m.startsWith(QStringLiteral("metrics/"))) return 2;
    if (m.startsWith(QStringLiteral("lr/"))) return 4;
    return 3;
}

constexpr std::uint64_t kMaxReportBytes = 256ull << 20;

bool ends_with(const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() &&
           text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

bool names_validation_report(const std::string& artifact) {
    return artifact == kValidationReportArtifact ||
           ends_with(artifact, std::string("/") + kValidationReportArtifact);
}

// What a background fetch hands back; found = false when the run has no report (yet).
struct ValidationFetch {
    bool found = false;
    QString source;
    ValidationData data;
};

ValidationFetch parse_report_file(const std::filesystem::path& file, const QString& source) {
    ValidationFetch out;
    out.found = true;
    out.source = source;
    out.data = parse_validation_report(
        parse_json(read_file_bytes_limited(file, kMaxReportBytes), path_to_utf8(file)));
    return out;
}

bool is_state(const QString& text, JobState state) {
    return text == QLatin1String(job_state_name(state));
}

// Lists the job's artifacts and downloads the report (artifacts/ first) with the core/net client.
ValidationFetch fetch_remote_report(const net::RemoteEndpoint& endpoint, const std::string& job) {
    net::ApiClient client(endpoint);
    std::string path;
    for (const auto& artifact : client.artifacts(job)) {
        const std::string& p = artifact.path;
        if (p == JobFolder{}.validation_report().generic_string()) {
            path = p;
            break;
        }
        if (path.empty() && names_validation_report(p)) path = p;
    }
    if (path.empty()) return {};
    QTemporaryDir folder;
    if (!folder.isValid()) throw Error("no temporary folder for " + path);
    const auto file = path_from_utf8(folder.path().toStdString()) / kValidationReportArtifact;
    client.download(job, path, file, /*overwrite=*/true);
    return parse_report_file(file, QString::fromStdString(path));
}

}  // namespace

QString format_duration(double s) {
    if (!std::isfinite(s) || s < 0) return QStringLiteral("—");
    const auto total = static_cast<long long>(std::llround(s));
    const long long d = total / 86400, h = (total / 3600) % 24, m = (total / 60) % 60,
                    sec = total % 60;
    if (d > 0) return QStringLiteral("%1d %2h").arg(d).arg(h);
    if (h > 0) return QStringLiteral("%1h %2m").arg(h).arg(m, 2, 10, QLatin1Char('0'));
    if (m > 0) return QStringLiteral("%1m %2s").arg(m).arg(sec, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1s").arg(sec);
}

RunMonitor::RunMonitor(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);

    alarm_banner_ = new QLabel(this);
    alarm_banner_->setWordWrap(true);
    alarm_banner_->setStyleSheet(
        QStringLiteral("QLabel{background:#b3261e;color:white;padding:6px;border-radius:3px;}"));
    alarm_banner_->hide();
    outer->addWidget(alarm_banner_);

    auto* top = new QHBoxLayout;
    state_label_ = new QLabel(tr("no events yet"), this);
    progress_bar_ = new QProgressBar(this);
    progress_bar_->setRange(0, 1000);
    progress_bar_->setValue(0);
    progress_label_ = new QLabel(this);
    pause_ = new QPushButton(tr("Pause"), this);
    resume_ = new QPushButton(tr("Resume"), this);
    cancel_ = new QPushButton(tr("Cancel"), this);
    pause_->setObjectName(QStringLiteral("pause"));
    resume_->setObjectName(QStringLiteral("resume"));
    cancel_->setObjectName(QStringLiteral("cancel"));
    connect(pause_, &QPushButton::clicked, this, [this] { request(QStringLiteral("pause")); });
    connect(resume_, &QPushButton::clicked, this, [this] { request(QStringLiteral("resume")); });
    connect(cancel_, &QPushButton::clicked, this, [this] { request(QStringLiteral("cancel")); });
    top->addWidget(state_label_);
    top->addWidget(progress_bar_, 1);
    top->addWidget(progress_label_);
    top->addWidget(pause_);
    top->addWidget(resume_);
    top->addWidget(cancel_);
    outer->addLayout(top);

    auto* controls = new QHBoxLayout;
    smoothing_ = new QSlider(Qt::Horizontal, this);
    smoothing_->setRange(0, 99);
    smoothing_->setValue(60);
    smoothing_->setMaximumWidth(180);
    smoothing_label_ = new QLabel(QStringLiteral("0.60"), this);
    log_y_ = new QCheckBox(tr("log y"), this);
    x_axis_ = new QComboBox(this);
    x_axis_->addItems({tr("step"), tr("epoch"), tr("wall time")});
    auto* export_button = new QPushButton(tr("Export charts…"), this);
    controls->addWidget(new QLabel(tr("Smoothing"), this));
    controls->addWidget(smoothing_);
    controls->addWidget(smoothing_label_);
    controls->addSpacing(12);
    controls->addWidget(log_y_);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("x axis"), this));
    controls->addWidget(x_axis_);
    controls->addStretch(1);
    controls->addWidget(export_button);
    outer->addLayout(controls);
    connect(smoothing_, &QSlider::valueChanged, this, [this](int v) { set_smoothing(v / 100.0); });
    connect(log_y_, &QCheckBox::toggled, this, [this](bool on) { set_log_y(on); });
    connect(x_axis_, &QComboBox::currentIndexChanged, this,
            [this](int i) { set_x_axis(static_cast<XAxis>(i)); });
    connect(export_button, &QPushButton::clicked, this, [this] {
        QString dir = QFileDialog::getExistingDirectory(this, tr("Export charts to"));
        if (!dir.isEmpty()) export_all(dir);
    });

    auto* tabs = new QTabWidget(this);
    tabs_ = tabs;
    auto* split = new QSplitter(Qt::Horizontal, tabs);
    metric_list_ = new QListWidget(split);
    metric_list_->setMaximumWidth(260);
    connect(metric_list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
        set_metric_shown(item->text(), item->checkState() == Qt::Checked);
    });
    auto* scroll = new QScrollArea(split);
    scroll->setWidgetResizable(true);
    chart_area_ = new QWidget(scroll);
    chart_grid_ = new QGridLayout(chart_area_);
    scroll->setWidget(chart_area_);
    split->addWidget(metric_list_);
    split->addWidget(scroll);
    split->setStretchFactor(1, 1);
    tabs->addTab(split, tr("Charts"));
    log_ = new QPlainTextEdit(tabs);
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(20000);
    tabs->addTab(log_, tr("Log"));
    outer->addWidget(tabs, 1);

    // Events mark the charts dirty; one redraw per frame however fast they arrive.
    frame_timer_ = new QTimer(this);
    frame_timer_->setInterval(100);
    connect(frame_timer_, &QTimer::timeout, this, [this] {
        if (dirty_ || eval_dirty_) redraw_now();
    });
    frame_timer_->start();
    file_timer_ = new QTimer(this);
    connect(file_timer_, &QTimer::timeout, this, &RunMonitor::poll_files);
    set_buttons();
}

RunMonitor::~RunMonitor() {
    stop_ = true;
    for (auto& t : followers_)
        if (t.joinable()) t.join();
}

int RunMonitor::add_run(const QString& name) {
    auto run = std::make_unique<Run>();
    run->name = name;
    runs_.push_back(std::move(run));
    rebuild_charts();
    return run_count() - 1;
}

void RunMonitor::apply_events(int index, const std::vector<Event>& events) {
    Run& run = *runs_.at(static_cast<std::size_t>(index));
    const std::size_t before = run.series.series().size();
    for (const auto& e : events) {
        if (e.seq >= 0 && e.seq <= run.series.last_seq()) continue;
        // Events come from outside (a server, a file): a malformed one is reported and skipped.
        try {
            run.series.apply(e);
            const Json& f = e.fields;
            if (e.kind == event_kind::kProgress) {
                run.progress.step = f.value("step", std::int64_t{0});
                run.progress.total_steps = f.value("total_steps", std::int64_t{0});
                run.progress.epoch = f.value("epoch", 0);
                run.progress.epochs = f.value("epochs", 0);
                run.progress.items_per_s = f.value("items_per_s", 0.0);
                run.progress.eta_s = f.value("eta_s", -1.0);
            } else if (e.kind == event_kind::kStatus) {
                run.progress.state = qs(f.value("state", std::string()));
                run.progress.reason = qs(f.value("reason", std::string()));
                log_->appendPlainText(QStringLiteral("[%1] state: %2%3")
                                          .arg(run.name, run.progress.state,
                                               run.progress.reason.isEmpty()
                                                   ? QString()
                                                   : QStringLiteral(" (") + run.progress.reason +
                                                         QStringLiteral(")")));
            } else if (e.kind == event_kind::kLog) {
                log_->appendPlainText(QStringLiteral("[%1] %2: %3")
                                          .arg(run.name, qs(f.value("level", std::string("info"))),
                                               qs(f.value("message", std::string()))));
            } else if (e.kind == event_kind::kAlarm) {
                QString text = qs(f.value("alarm", std::string("alarm"))) + QStringLiteral(": ") +
                               qs(f.value("message", std::string()));
                run.progress.alarms << text;
                log_->appendPlainText(QStringLiteral("[%1] ALARM %2").arg(run.name, text));
            } else if (e.kind == event_kind::kRollback) {
                const auto to_step = f.value("to_step", std::int64_t{0});
                log_->appendPlainText(QStringLiteral("[%1] resumed: points after step %2 replaced")
                                          .arg(run.name)
                                          .arg(static_cast<long long>(to_step)));
                // Evaluations a rollback supersedes are dropped, as every other point.
                const auto kept =
                    std::remove_if(run.evals.begin(), run.evals.end(),
                                   [&](const EvalRows& r) { return r.step > to_step; });
                if (kept != run.evals.end()) {
                    run.evals.erase(kept, run.evals.end());
                    eval_dirty_ = true;
                }
                if (samples_) samples_->drop_after(run.name, to_step);
            } else if (e.kind == event_kind::kEval) {
                auto rows = f.find("per_class");
                if (rows != f.end() && rows->is_array() && !rows->empty()) {
                    run.evals.push_back({e.step(), f.value("epoch", 0), parse_per_class(*rows)});
                    eval_dirty_ = true;
                }
            } else if (e.kind == event_kind::kSample) {
                add_sample(index, e);
            } else if (e.kind == event_kind::kArtifact) {
                const std::string name = f.value("name", std::string());
                log_->appendPlainText(QStringLiteral("[%1] artifact: %2").arg(run.name, qs(name)));
                // A report written again (e.g. a later validation) is fetched again.
                if (names_validation_report(name) && run.validation_fetch != Fetch::Busy) {
                    run.validation_fetch = Fetch::Wanted;
                    fetch_validation(index);
                }
            }
            if (e.kind == event_kind::kStatus &&
                is_state(run.progress.state, JobState::Succeeded) &&
                run.validation_fetch == Fetch::Idle) {
                run.validation_fetch = Fetch::Wanted;  // the report is written before the end
                fetch_validation(index);
            }
        } catch (const std::exception& ex) {
            log_->appendPlainText(tr("[%1] event %2 skipped: %3")
                                      .arg(run.name)
                                      .arg(static_cast<long long>(e.seq))
                                      .arg(QString::fromUtf8(ex.what())));
        }
    }
    if (run.series.series().size() != before) metrics_dirty_ = true;
    dirty_ = true;
}

int RunMonitor::add_store_run(store::Project& project, std::int64_t run_id, const QString& name) {
    int index = add_run(name);
    apply_events(index, store::read_events(project, run_id));
    return index;
}

int RunMonitor::follow_file(const std::filesystem::path& events_jsonl, const QString& name,
                            int interval_ms) {
    int index = add_run(name);
    runs_.back()->file = events_jsonl;
    file_timer_->start(interval_ms);
    poll_files();
    fetch_validation(index);
    return index;
}

void RunMonitor::poll_files() {
    for (std::size_t i = 0; i < runs_.size(); ++i) {
        Run& run = *runs_[i];
        if (run.file.empty() || run.file_busy) continue;
        run.file_busy = true;
        const auto path = run.file;
        const auto after = run.series.last_seq();
        const int index = static_cast<int>(i);
        run_in_background<std::vector<Event>>(
            this,
            [path, after] {
                if (!std::filesystem::exists(path)) return std::vector<Event>{};
                return read_event_log(path, after);
            },
            [this, index](std::vector<Event> events, QString error) {
                runs_.at(static_cast<std::size_t>(index))->file_busy = false;
                if (!error.isEmpty()) {
                    log_->appendPlainText(tr("cannot read events: %1").arg(error));
                    return;
                }
                if (!events.empty()) apply_events(index, events);
            });
    }
}

void RunMonitor::follow_remote(int index, const net::RemoteEndpoint& endpoint,
                               const QString& job_id, std::int64_t after_seq,
                               std::function<void(const std::vector<Event>&)> on_new) {
    set_remote_job(endpoint, job_id);
    Run& run = *runs_.at(static_cast<std::size_t>(index));
    run.endpoint = endpoint;
    run.job_id = job_id;
    fetch_validation(index);  // a run that ended before it was opened
    auto on_new_shared =
        std::make_shared<std::function<void(const std::vector<Event>&)>>(std::move(on_new));
    followers_.emplace_back(
        [this, endpoint, job = job_id.toStdString(), after_seq, index, on_new_shared] {
            try {
                net::ApiClient client(endpoint);
                client.follow_events(
                    job, after_seq,
                    [&](const Event& e) {
                        // One event per queued call keeps order; the frame timer batches drawing.
                        QMetaObject::invokeMethod(
                            this,
                            [this, index, e, on_new_shared] {
                                std::vector<Event> batch{e};
                                if (*on_new_shared) (*on_new_shared)(batch);
                                apply_events(index, batch);
                            },
                            Qt::QueuedConnection);
                        return !stop_.load();
                    },
                    &stop_, std::chrono::seconds(10));
            } catch (const std::exception& e) {
                QString text = QString::fromUtf8(e.what());
                QMetaObject::invokeMethod(
                    this, [this, text] { log_->appendPlainText(tr("event stream: %1").arg(text)); },
                    Qt::QueuedConnection);
            }
        });
}

void RunMonitor::set_remote_job(const net::RemoteEndpoint& endpoint, const QString& job_id) {
    endpoint_ = endpoint;
    job_id_ = job_id;
    set_buttons();
}

void RunMonitor::set_buttons() {
    const bool remote = !job_id_.isEmpty();
    pause_->setEnabled(remote);
    resume_->setEnabled(remote);
    cancel_->setEnabled(remote);
    const QString tip = remote ? QString() : tr("this run is not running on a server");
    pause_->setToolTip(tip);
    resume_->setToolTip(tip);
    cancel_->setToolTip(tip);
}

void RunMonitor::request(const QString& action) {
    if (job_id_.isEmpty()) return;
    const auto endpoint = endpoint_;
    const auto job_action = net::parse_job_action(action.toStdString());
    if (!job_action) return;
    const std::string job = job_id_.toStdString();
    log_->appendPlainText(tr("%1 requested").arg(action));
    run_in_background<bool>(
        this,
        [endpoint, job, job_action] {
            net::ApiClient(endpoint).control(job, *job_action);
            return true;
        },
        [this, action](bool, QString error) {
            const bool ok = error.isEmpty();
            QString message = ok ? tr("the agent will %1 the job").arg(action) : error;
            log_->appendPlainText(ok ? tr("%1 accepted: %2").arg(action, message)
                                     : tr("%1 refused: %2").arg(action, message));
            emit request_finished(action, ok, message);
        });
}

QStringList RunMonitor::metric_names() const {
    QStringList names;
    for (const auto& run : runs_)
        for (const auto& [name, s] : run->series.series())
            if (!names.contains(qs(name))) names << qs(name);
    std::stable_sort(names.begin(), names.end(), [](const QString& a, const QString& b) {
        int ra = metric_rank(a), rb = metric_rank(b);
        return ra != rb ? ra < rb : a < b;
    });
    return names;
}

void RunMonitor::update_metric_list() {
    const QStringList names = metric_names();
    const bool first = shown_.isEmpty() && metric_list_->count() == 0;
    QSignalBlocker block(metric_list_);
    for (const auto& name : names) {
        if (!metric_list_->findItems(name, Qt::MatchExactly).isEmpty()) continue;
        auto* item = new QListWidgetItem(name, metric_list_);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        // Show the first few (losses, then quality) when a run first reports metrics.
        const bool show = first && shown_.size() < 6 && metric_rank(name) < 3;
        item->setCheckState(show ? Qt::Checked : Qt::Unchecked);
        if (show) shown_ << name;
    }
    if (first && shown_.isEmpty())
        for (int i = 0; i < std::min(4, metric_list_->count()); ++i) {
            metric_list_->item(i)->setCheckState(Qt::Checked);
            shown_ << metric_list_->item(i)->text();
        }
    rebuild_charts();
}

void RunMonitor::set_metric_shown(const QString& metric, bool shown) {
    if (shown && !shown_.contains(metric)) shown_ << metric;
    if (!shown) shown_.removeAll(metric);
    auto items = metric_list_->findItems(metric, Qt::MatchExactly);
    if (!items.isEmpty()) {
        QSignalBlocker block(metric_list_);
        items.front()->setCheckState(shown ? Qt::Checked : Qt::Unchecked);
    }
    rebuild_charts();
}

QStringList RunMonitor::shown_metrics() const {
    return shown_;
}

RunChart* RunMonitor::chart(const QString& metric) const {
    auto it = charts_.find(metric);
    return it == charts_.end() ? nullptr : it->second;
}

void RunMonitor::rebuild_charts() {
    std::vector<ChartRun> runs;
    for (const auto& r : runs_)
        runs.push_back({r->name, &r->series});
    for (auto it = charts_.begin(); it != charts_.end();) {
        if (!shown_.contains(it->first)) {
            it->second->deleteLater();
            it = charts_.erase(it);
        } else {
            ++it;
        }
    }
    int i = 0;
    for (const auto& metric : shown_) {
        RunChart*& c = charts_[metric];
        if (!c) {
            c = new RunChart(metric, chart_area_);
            c->set_smoothing(smoothing_->value() / 100.0);
            c->set_log_y(log_y_->isChecked());
            c->set_x_axis(static_cast<XAxis>(x_axis_->currentIndex()));
        }
        chart_grid_->addWidget(c, i / 2, i % 2);
        c->set_runs(runs);
        ++i;
    }
}

void RunMonitor::redraw_now() {
    if (eval_dirty_) {
        eval_dirty_ = false;
        update_eval_panels();
    }
    if (metrics_dirty_) {
        metrics_dirty_ = false;
        update_metric_list();
    } else {
        for (auto& [_, c] : charts_)
            c->refresh();
    }
    update_progress();
    dirty_ = false;
}

void RunMonitor::update_progress() {
    if (runs_.empty()) return;
    // The bar follows the last run added (the one being watched); others are overlays.
    const RunProgress& p = runs_.back()->progress;
    if (p.total_steps > 0)
        progress_bar_->setValue(static_cast<int>(1000.0 * static_cast<double>(p.step) /
                                                 static_cast<double>(p.total_steps)));
    progress_label_->setText(progress_text());
    QString state = p.state.isEmpty() ? tr("no status yet") : p.state;
    if (!p.reason.isEmpty()) state += QStringLiteral(" — ") + p.reason;
    state_label_->setText(state);
    QStringList banner = p.alarms;
    if (is_state(p.state, JobState::Failed) || is_state(p.state, JobState::Interrupted))
        banner.prepend(
            tr("run %1%2")
                .arg(p.state, p.reason.isEmpty() ? QString() : QStringLiteral(": ") + p.reason));
    alarm_banner_->setText(banner.join(QLatin1Char('\n')));
    alarm_banner_->setVisible(!banner.isEmpty());
}

QString RunMonitor::progress_text() const {
    if (runs_.empty()) return {};
    const RunProgress& p = runs_.back()->progress;
    if (p.total_steps <= 0) return {};
    QString text = tr("step %1/%2 · epoch %3/%4 · %5 it/s")
                       .arg(p.step)
                       .arg(p.total_steps)
                       .arg(p.epoch + 1)
                       .arg(p.epochs)
                       .arg(p.items_per_s, 0, 'f', 1);
    const auto state = try_parse_job_state(p.state.toStdString());
    const bool ended = state && is_final_state(*state);
    if (!ended && p.eta_s >= 0) text += tr(" · ETA %1").arg(format_duration(p.eta_s));
    return text;
}

QString RunMonitor::log_text() const {
    return log_->toPlainText();
}

void RunMonitor::set_smoothing(double weight) {
    smoothing_label_->setText(QString::number(weight, 'f', 2));
    {
        QSignalBlocker block(smoothing_);
        smoothing_->setValue(static_cast<int>(std::lround(weight * 100)));
    }
    for (auto& [_, c] : charts_)
        c->set_smoothing(weight);
}

void RunMonitor::set_log_y(bool on) {
    {
        QSignalBlocker block(log_y_);
        log_y_->setChecked(on);
    }
    for (auto& [_, c] : charts_)
        c->set_log_y(on);
}

void RunMonitor::set_x_axis(XAxis axis) {
    {
        QSignalBlocker block(x_axis_);
        x_axis_->setCurrentIndex(static_cast<int>(axis));
    }
    for (auto& [_, c] : charts_)
        c->set_x_axis(axis);
}

QStringList RunMonitor::export_all(const QString& folder) {
    redraw_now();
    QStringList written;
    for (const auto& [metric, c] : charts_) {
        QString base = metric;
        base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]+")), QStringLiteral("_"));
        const QString png = QDir(folder).filePath(base + QStringLiteral(".png"));
        const QString csv = QDir(folder).filePath(base + QStringLiteral(".csv"));
        if (c->export_png(png)) written << png;
        if (c->export_csv(csv)) written << csv;
    }
    log_->appendPlainText(tr("exported %1 files to %2").arg(written.size()).arg(folder));
    return written;
}

void RunMonitor::fetch_validation(int index) {
    Run& run = *runs_.at(static_cast<std::size_t>(index));
    if (run.validation_fetch != Fetch::Wanted) return;
    const bool remote = !run.job_id.isEmpty();
    if (!remote && run.file.empty()) return;  // no source yet: following it fetches
    run.validation_fetch = Fetch::Busy;
    const auto endpoint = run.endpoint;
    const std::string job = run.job_id.toStdString();
    const auto local = run.file.empty() ? std::filesystem::path()
                                        : JobFolder{run.file.parent_path()}.validation_report();
    run_in_background<ValidationFetch>(
        this,
        [remote, endpoint, job, local]() -> ValidationFetch {
            if (remote) return fetch_remote_report(endpoint, job);
            std::error_code ec;
            if (!std::filesystem::is_regular_file(local, ec)) return {};
            return parse_report_file(local, QString::fromStdString(path_to_utf8(local)));
        },
        [this, index](ValidationFetch fetched, QString error) {
            Run& r = *runs_.at(static_cast<std::size_t>(index));
            r.validation_fetch = Fetch::Done;
            if (!error.isEmpty()) {
                log_->appendPlainText(tr("[%1] validation report: %2").arg(r.name, error));
                return;
            }
            if (!fetched.found) {
                r.validation_fetch = Fetch::Idle;  // an artifact event may name it later
                return;
            }
            log_->appendPlainText(tr("[%1] validation report %2").arg(r.name, fetched.source));
            r.validation = std::move(fetched.data);
            update_eval_panels();
            emit validation_loaded(index);
        });
}

void RunMonitor::set_validation_report(int index, const Json& report) {
    Run& run = *runs_.at(static_cast<std::size_t>(index));
    run.validation = parse_validation_report(report);
    update_eval_panels();
}

void RunMonitor::add_sample(int index, const Event& e) {
    const Run& run = *runs_.at(static_cast<std::size_t>(index));
    SampleEntry entry;
    entry.step = e.step();
    entry.run = run.name;
    entry.prompt = qs(e.fields.value("prompt", std::string()));
    entry.text = qs(e.fields.value("text", std::string()));
    const std::string image = e.fields.value("image", std::string());
    entry.image = qs(image);
    if (!samples_) samples_ = new SamplesPanel(tabs_);
    show_panel(samples_, tr("Samples"));
    samples_->add(std::move(entry));
    if (!image.empty()) load_sample_image(index, image);
}

void RunMonitor::load_sample_image(int index, const std::string& artifact) {
    const Run& run = *runs_.at(static_cast<std::size_t>(index));
    const QString name = qs(artifact);
    const bool remote = !run.job_id.isEmpty();
    if (!remote && run.file.empty()) {
        samples_->set_image(name, {}, tr("(picture on the server: %1)").arg(name));
        return;
    }
    const auto endpoint = run.endpoint;
    const std::string job = run.job_id.toStdString();
    const auto artifacts =
        run.file.empty() ? std::filesystem::path() : JobFolder{run.file.parent_path()}.artifacts();
    run_in_background<QImage>(
        this,
        [remote, endpoint, job, artifact, artifacts]() -> QImage {
            if (!remote) {
                // Artifact names are relative to artifacts/ (the agent refuses the rest itself).
                const auto local = artifacts / path_from_utf8(artifact);
                if (!is_path_inside(artifacts, local))
                    throw InputError(artifact, "refused: the name leaves artifacts/");
                return QImage(QString::fromStdString(path_to_utf8(local)));
            }
            QTemporaryDir folder;
            if (!folder.isValid()) throw Error("no temporary folder for " + artifact);
            const auto file = path_from_utf8(folder.path().toStdString()) / "sample";
            net::ApiClient(endpoint).download(
                job, path_to_utf8(JobFolder{}.artifacts()) + "/" + artifact, file, true);
            return QImage(QString::fromStdString(path_to_utf8(file)));
        },
        [this, name](QImage picture, QString error) {
            if (!samples_) return;
            if (picture.isNull() && error.isEmpty()) error = tr("not a readable picture");
            samples_->set_image(name, picture,
                                error.isEmpty() ? QString() : tr("(%1: %2)").arg(name, error));
        });
}

void RunMonitor::show_panel(QWidget* panel, const QString& title) {
    if (tabs_->indexOf(panel) < 0) tabs_->insertTab(tabs_->count() - 1, panel, title);
}

void RunMonitor::update_eval_panels() {
    if (runs_.empty()) return;
    // Like the progress bar, the panels follow the last run added.
    const Run& run = *runs_.back();
    const ValidationData* report = run.validation ? &*run.validation : nullptr;
    if (!run.evals.empty() || (report && !report->per_class.empty())) {
        if (!per_class_) per_class_ = new PerClassTable(tabs_);
        if (!run.evals.empty()) {
            const EvalRows& last = run.evals.back();
            per_class_->set_rows(last.rows, tr("%1 · epoch %2, step %3")
                                                .arg(run.name)
                                                .arg(last.epoch)
                                                .arg(static_cast<long long>(last.step)));
        } else {
            per_class_->set_rows(report->per_class, tr("%1 · validation report").arg(run.name));
        }
        show_panel(per_class_, tr("Per class"));
    }
    if (report && report->confusion) {
        if (!confusion_) confusion_ = new ConfusionMatrixPanel(tabs_);
        confusion_->set_data(*report->confusion);
        show_panel(confusion_, tr("Confusion matrix"));
    }
    if (report && report->curves) {
        if (!pr_curves_) pr_curves_ = new PrCurvePanel(tabs_);
        pr_curves_->set_curves(*report->curves, report->per_class);
        show_panel(pr_curves_, tr("PR curves"));
    }
}

}  // namespace crucible::ui
