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
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "core/base/job_state.h"
#include "core/store/project.h"
#include "ui/background.h"
#include "ui/eval_panels.h"
#include "ui/samples_panel.h"
#include "ui/theme.h"

namespace crucible::ui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

bool is_state(const QString& text, JobState state) {
    return text == QLatin1String(job_state_name(state));
}

}  // namespace

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
    // Shortcuts of the monitor on screen (a hidden tab's buttons do not take them).
    pause_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    resume_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_U));
    cancel_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_X));
    for (QPushButton* b : {pause_, resume_, cancel_})
        b->setToolTip(b->shortcut().toString(QKeySequence::NativeText));
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
    log_->setFont(fixed_width_font());
    tabs->addTab(log_, tr("Log"));
    outer->addWidget(tabs, 1);

    // Events mark the charts dirty; one redraw per frame however fast they arrive.
    frame_timer_ = new QTimer(this);
    frame_timer_->setInterval(100);
    connect(frame_timer_, &QTimer::timeout, this, [this] {
        if (dirty_ || eval_dirty_) redraw_now();
    });
    frame_timer_->start();
    set_buttons();
}

RunMonitor::~RunMonitor() {
    // Sources go first, while the widgets their signals reach still exist; none waits.
    for (auto& link : links_)
        link.sources.clear();
}

int RunMonitor::add_run(const QString& name) {
    const int index = model_.add_run(name);
    links_.emplace_back();
    rebuild_charts();
    return index;
}

void RunMonitor::apply_events(int index, const std::vector<Event>& events) {
    RunChanges changes = model_.apply(index, events);
    if (!changes.applied) return;
    const QString& name = model_.name(index);
    for (const auto& line : changes.log)
        log_->appendPlainText(line);
    if (changes.rolled_back_to && samples_) samples_->drop_after(name, *changes.rolled_back_to);
    if (!changes.samples.empty()) add_samples(index, changes);
    if (changes.evals) eval_dirty_ = true;
    if (changes.new_metrics) metrics_dirty_ = true;
    dirty_ = true;
    set_buttons();  // the run's state may have changed what can be asked of it
    RunLink& run = link(index);
    // A report written again (e.g. a later validation) is fetched again; one written before the
    // run succeeded is fetched when it does.
    if ((changes.report_written && run.validation_fetch != Fetch::Busy) ||
        (changes.succeeded && run.validation_fetch == Fetch::Idle)) {
        run.validation_fetch = Fetch::Wanted;
        fetch_validation(index);
    }
}

void RunMonitor::add_source(int index, std::unique_ptr<RunSource> source,
                            std::function<void(const std::vector<Event>&)> on_new) {
    RunSource* s = source.get();
    RunLink& run = link(index);
    const RunPlace place = s->place();
    if (place.known()) run.place = place;
    run.sources.push_back(std::move(source));
    connect(s, &RunSource::arrived, this,
            [this, index, s, on_new = std::move(on_new)](const std::vector<Event>& events) {
                if (on_new) on_new(events);
                RunLink& r = link(index);
                // A live stream continues after the stored events: it waits until they are in.
                if (r.stored && r.stored != s) {
                    r.held.insert(r.held.end(), events.begin(), events.end());
                    return;
                }
                apply_events(index, events);
            });
    connect(s, &RunSource::problem, this, [this, index](const QString& message) {
        log_->appendPlainText(QStringLiteral("[%1] %2").arg(model_.name(index), message));
    });
    connect(s, &RunSource::ended, this, [this, index, s] {
        RunLink& r = link(index);
        if (r.stored != s) return;
        r.stored = nullptr;
        std::vector<Event> held;
        held.swap(r.held);
        if (!held.empty()) apply_events(index, held);
        redraw_now();
    });
    s->start();
}

int RunMonitor::add_store_run(store::Project& project, std::int64_t run_id, const QString& name) {
    const int index = add_run(name);
    auto source = std::make_unique<StoredRunSource>(project.path(), run_id);
    link(index).stored = source.get();
    link(index).store_run = run_id;
    store_runs_.push_back(run_id);
    add_source(index, std::move(source));
    return index;
}

bool RunMonitor::shows_store_run(std::int64_t run_id) const {
    return std::find(store_runs_.begin(), store_runs_.end(), run_id) != store_runs_.end();
}

bool RunMonitor::loading() const {
    return std::any_of(links_.begin(), links_.end(),
                       [](const RunLink& r) { return r.stored != nullptr; });
}

int RunMonitor::follow_file(const std::filesystem::path& events_jsonl, const QString& name,
                            int interval_ms) {
    const int index = add_run(name);
    add_source(index, std::make_unique<EventsFileSource>(events_jsonl, interval_ms));
    fetch_validation(index);
    return index;
}

void RunMonitor::follow_remote(int index, const net::RemoteEndpoint& endpoint,
                               const QString& job_id, std::int64_t after_seq,
                               std::function<void(const std::vector<Event>&)> on_new) {
    set_remote_job(endpoint, job_id);
    add_source(index, std::make_unique<AgentRunSource>(endpoint, job_id.toStdString(), after_seq),
               std::move(on_new));
    fetch_validation(index);  // a run that ended before it was opened
}

void RunMonitor::set_remote_job(const net::RemoteEndpoint& endpoint, const QString& job_id) {
    control_ = RunPlace{};
    control_.endpoint = endpoint;
    control_.job = job_id.toStdString();
    set_buttons();
}

void RunMonitor::set_buttons() {
    const bool remote = control_.remote();
    // The state the run's events last gave; before the first one, the agent decides.
    const auto state =
        model_.run_count() == 0
            ? std::nullopt
            : try_parse_job_state(model_.progress(model_.run_count() - 1).state.toStdString());
    const bool canceling = model_.run_count() > 0 &&
                           model_.progress(model_.run_count() - 1).state == RunModel::kCanceling;
    const auto offer = [&](QPushButton* button, bool (*applies)(JobState)) {
        const bool ok = remote && !canceling && (!state || applies(*state));
        button->setEnabled(ok);
        button->setToolTip(!remote     ? tr("this run is not running on a server")
                           : ok        ? QString()
                           : canceling ? tr("the run is being canceled")
                                       : tr("the run is %1").arg(QString(job_state_name(*state))));
    };
    offer(pause_, &can_pause);
    offer(resume_, &can_resume);
    offer(cancel_, &can_cancel);
}

void RunMonitor::request(const QString& action) {
    const auto job_action = net::parse_job_action(action.toStdString());
    if (!control_.remote() || !job_action) return;
    const RunPlace place = control_;
    log_->appendPlainText(tr("%1 requested").arg(action));
    run_in_background<bool>(
        this,
        [place, job_action] {
            send_control(place, *job_action);
            return true;
        },
        [this, action](bool, QString error) {
            const bool ok = error.isEmpty();
            QString message = ok ? tr("the agent will %1 the job").arg(action) : error;
            log_->appendPlainText(ok ? tr("%1 accepted: %2").arg(action, message)
                                     : tr("%1 refused: %2").arg(action, message));
            if (ok && action == QLatin1String("cancel") && model_.run_count() > 0) {
                model_.mark_canceling(model_.run_count() - 1);
                set_buttons();
                update_progress();
            }
            emit request_finished(action, ok, message);
        });
}

void RunMonitor::update_metric_list() {
    const QStringList names = model_.metric_names();
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
    for (int r = 0; r < model_.run_count(); ++r)
        runs.push_back({model_.name(r), &model_.series(r)});
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
    if (model_.run_count() == 0) return;
    // The bar follows the last run added (the one being watched); others are overlays.
    const RunProgress& p = model_.progress(model_.run_count() - 1);
    if (p.total_steps > 0) {
        progress_bar_->setValue(static_cast<int>(1000.0 * static_cast<double>(p.step) /
                                                 static_cast<double>(p.total_steps)));
        progress_bar_->setFormat(QStringLiteral("%p%"));
    } else {
        // No step counted yet: the bar says what the run is doing (queued, starting), not "0%".
        progress_bar_->setValue(0);
        progress_bar_->setFormat(is_state(p.state, JobState::Queued) ? tr("queued")
                                 : p.state.isEmpty()                 ? tr("waiting")
                                                                     : tr("starting"));
    }
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

QString RunMonitor::progress_bar_text() const {
    return progress_bar_->text();
}

QString RunMonitor::progress_text() const {
    return model_.run_count() == 0 ? QString() : model_.progress_text(model_.run_count() - 1);
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

void RunMonitor::set_run_place(int index, const RunPlace& place) {
    link(index).place = place;
    fetch_validation(index);  // when it waited for a place
}

void RunMonitor::fetch_validation(int index) {
    RunLink& run = link(index);
    if (run.validation_fetch != Fetch::Wanted) return;
    if (!run.place.known()) return;  // no place yet: following the run fetches
    run.validation_fetch = Fetch::Busy;
    run_in_background<FetchedReport>(
        this, [place = run.place] { return fetch_validation_report(place); },
        [this, index](FetchedReport fetched, QString error) {
            RunLink& r = link(index);
            const QString& name = model_.name(index);
            r.validation_fetch = Fetch::Done;
            if (!error.isEmpty()) {
                log_->appendPlainText(tr("[%1] validation report: %2").arg(name, error));
                return;
            }
            if (!fetched.found) {
                r.validation_fetch = Fetch::Idle;  // an artifact event may name it later
                return;
            }
            log_->appendPlainText(tr("[%1] validation report %2").arg(name, fetched.source));
            model_.set_validation(index, std::move(fetched.data));
            update_eval_panels();
            emit validation_loaded(index);
        });
}

void RunMonitor::set_validation_report(int index, const Json& report) {
    model_.set_validation(index, parse_validation_report(report));
    update_eval_panels();
}

void RunMonitor::add_samples(int index, const RunChanges& changes) {
    if (!samples_) samples_ = new SamplesPanel(tabs_);
    show_panel(samples_, tr("Samples"));
    for (const RunSample& s : changes.samples) {
        SampleEntry entry;
        entry.step = s.step;
        entry.run = model_.name(index);
        entry.prompt = s.prompt;
        entry.text = s.text;
        entry.image = s.image;
        samples_->add(std::move(entry));
        if (!s.image.isEmpty()) load_sample_image(index, s.image.toStdString());
    }
}

void RunMonitor::load_sample_image(int index, const std::string& artifact) {
    const RunPlace& place = link(index).place;
    const QString name = qs(artifact);
    if (!place.known()) {
        samples_->set_image(name, {}, tr("(picture on the server: %1)").arg(name));
        return;
    }
    run_in_background<QImage>(
        this, [place, artifact] { return fetch_sample_picture(place, artifact); },
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
    if (model_.run_count() == 0) return;
    // Like the progress bar, the panels follow the last run added.
    const int run = model_.run_count() - 1;
    const QString& name = model_.name(run);
    const std::vector<EvalRows>& evals = model_.evals(run);
    const ValidationData* report = model_.validation(run);
    if (!evals.empty() || (report && !report->per_class.empty())) {
        if (!per_class_) {
            per_class_ = new PerClassTable(tabs_);
            connect(per_class_, &PerClassTable::class_activated, this, [this](int cls) {
                DrillFilter f;
                f.cls = cls;
                emit drill_down_requested(link(model_.run_count() - 1).store_run, f);
            });
            connect(per_class_, &PerClassTable::tag_breakdown_requested, this,
                    [this] { emit tag_metrics_requested(link(model_.run_count() - 1).store_run); });
        }
        if (!evals.empty()) {
            const EvalRows& last = evals.back();
            per_class_->set_rows(last.rows, tr("%1 · epoch %2, step %3")
                                                .arg(name)
                                                .arg(last.epoch)
                                                .arg(static_cast<long long>(last.step)));
        } else {
            per_class_->set_rows(report->per_class, tr("%1 · validation report").arg(name));
        }
        show_panel(per_class_, tr("Per class"));
    }
    if (report && report->confusion) {
        if (!confusion_) {
            confusion_ = new ConfusionMatrixPanel(tabs_);
            connect(confusion_, &ConfusionMatrixPanel::cell_clicked, this,
                    [this](int predicted, int truth) {
                        DrillFilter f;
                        f.cell = std::pair{predicted, truth};
                        emit drill_down_requested(link(model_.run_count() - 1).store_run, f);
                    });
        }
        confusion_->set_data(*report->confusion);
        show_panel(confusion_, tr("Confusion matrix"));
    }
    if (report && report->curves) {
        if (!pr_curves_) {
            pr_curves_ = new PrCurvePanel(tabs_);
            connect(pr_curves_, &PrCurvePanel::point_clicked, this, [this](int cls, double recall) {
                DrillFilter f;
                f.cls = cls;
                f.recall = recall;
                emit drill_down_requested(link(model_.run_count() - 1).store_run, f);
            });
        }
        pr_curves_->set_curves(*report->curves, report->per_class);
        show_panel(pr_curves_, tr("PR curves"));
    }
}

}  // namespace crucible::ui
