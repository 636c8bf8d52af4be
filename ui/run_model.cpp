#include "ui/run_model.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>
#include <set>

#include "core/base/job_folder.h"
#include "core/base/job_state.h"

namespace crucible::ui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

QString tr(const char* text) {
    return QCoreApplication::translate("crucible::ui::RunModel", text);
}

bool ends_with(const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() &&
           text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_state(const QString& text, JobState state) {
    return text == QLatin1String(job_state_name(state));
}

}  // namespace

struct RunModel::Run {
    QString name;
    RunSeries series;
    RunProgress progress;
    std::vector<EvalRows> evals;
    std::optional<ValidationData> validation;
};

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

int metric_rank(const QString& m) {
    if (m.startsWith(QStringLiteral("train/"))) return 0;
    if (m.startsWith(QStringLiteral("val/"))) return 1;
    if (m.startsWith(QStringLiteral("metrics/"))) return 2;
    if (m.startsWith(QStringLiteral("lr/"))) return 4;
    return 3;
}

bool names_validation_report(const std::string& artifact) {
    return artifact == kValidationReportArtifact ||
           ends_with(artifact, std::string("/") + kValidationReportArtifact);
}

RunModel::RunModel() = default;
RunModel::~RunModel() = default;
RunModel::RunModel(RunModel&&) noexcept = default;
RunModel& RunModel::operator=(RunModel&&) noexcept = default;

int RunModel::add_run(const QString& name) {
    auto run = std::make_unique<Run>();
    run->name = name;
    runs_.push_back(std::move(run));
    return run_count() - 1;
}

int RunModel::run_count() const {
    return static_cast<int>(runs_.size());
}

RunModel::Run& RunModel::at(int run) {
    return *runs_.at(static_cast<std::size_t>(run));
}

const RunModel::Run& RunModel::at(int run) const {
    return *runs_.at(static_cast<std::size_t>(run));
}

const QString& RunModel::name(int run) const {
    return at(run).name;
}

const RunSeries& RunModel::series(int run) const {
    return at(run).series;
}

const RunProgress& RunModel::progress(int run) const {
    return at(run).progress;
}

const std::vector<EvalRows>& RunModel::evals(int run) const {
    return at(run).evals;
}

const ValidationData* RunModel::validation(int run) const {
    const Run& r = at(run);
    return r.validation ? &*r.validation : nullptr;
}

void RunModel::mark_canceling(int run) {
    RunProgress& p = at(run).progress;
    const auto state = try_parse_job_state(p.state.toStdString());
    if (state && is_final_state(*state)) return;  // it ended meanwhile
    p.state = QString::fromLatin1(kCanceling);
    p.reason.clear();
}

void RunModel::set_validation(int run, ValidationData report) {
    at(run).validation = std::move(report);
}

RunChanges RunModel::apply(int index, const std::vector<Event>& events) {
    Run& run = at(index);
    RunChanges changes;
    const std::size_t before = run.series.series().size();
    for (const auto& e : events) {
        if (e.seq >= 0 && e.seq <= run.series.last_seq()) continue;
        changes.applied = true;
        // Events come from outside (a server, a file): a malformed one is reported and skipped.
        try {
            run.series.apply(e);
            const Json& f = e.fields;
            if (e.kind == event_kind::kProgress) {
                RunProgress& p = run.progress;
                p.step = f.value("step", std::int64_t{0});
                p.total_steps = f.value("total_steps", std::int64_t{0});
                p.epoch = f.value("epoch", 0);
                p.epochs = f.value("epochs", 0);
                p.items_per_s = f.value("items_per_s", 0.0);
                p.eta_s = f.value("eta_s", -1.0);
            } else if (e.kind == event_kind::kStatus) {
                run.progress.state = qs(f.value("state", std::string()));
                run.progress.reason = qs(f.value("reason", std::string()));
                changes.log << QStringLiteral("[%1] state: %2%3")
                                   .arg(run.name, run.progress.state,
                                        run.progress.reason.isEmpty()
                                            ? QString()
                                            : QStringLiteral(" (") + run.progress.reason +
                                                  QStringLiteral(")"));
                // The report is written before the run ends.
                if (is_state(run.progress.state, JobState::Succeeded)) changes.succeeded = true;
            } else if (e.kind == event_kind::kLog) {
                changes.log << QStringLiteral("[%1] %2: %3")
                                   .arg(run.name, qs(f.value("level", std::string("info"))),
                                        qs(f.value("message", std::string())));
            } else if (e.kind == event_kind::kAlarm) {
                QString text = qs(f.value("alarm", std::string("alarm"))) + QStringLiteral(": ") +
                               qs(f.value("message", std::string()));
                run.progress.alarms << text;
                changes.log << QStringLiteral("[%1] ALARM %2").arg(run.name, text);
            } else if (e.kind == event_kind::kRollback) {
                const auto to_step = f.value("to_step", std::int64_t{0});
                changes.log << QStringLiteral("[%1] resumed: points after step %2 replaced")
                                   .arg(run.name)
                                   .arg(static_cast<long long>(to_step));
                // Evaluations and samples a rollback supersedes are dropped, as every point.
                const auto kept =
                    std::remove_if(run.evals.begin(), run.evals.end(),
                                   [&](const EvalRows& r) { return r.step > to_step; });
                if (kept != run.evals.end()) {
                    run.evals.erase(kept, run.evals.end());
                    changes.evals = true;
                }
                std::erase_if(changes.samples,
                              [&](const RunSample& s) { return s.step > to_step; });
                changes.rolled_back_to =
                    std::min(changes.rolled_back_to.value_or(to_step), to_step);
            } else if (e.kind == event_kind::kEval) {
                auto rows = f.find("per_class");
                if (rows != f.end() && rows->is_array() && !rows->empty()) {
                    run.evals.push_back({e.step(), f.value("epoch", 0), parse_per_class(*rows)});
                    changes.evals = true;
                }
            } else if (e.kind == event_kind::kSample) {
                changes.samples.push_back({e.step(), qs(f.value("prompt", std::string())),
                                           qs(f.value("text", std::string())),
                                           qs(f.value("image", std::string()))});
            } else if (e.kind == event_kind::kArtifact) {
                const std::string name = f.value("name", std::string());
                changes.log << QStringLiteral("[%1] artifact: %2").arg(run.name, qs(name));
                // A report written again (e.g. a later validation) is read again.
                if (names_validation_report(name)) changes.report_written = true;
            }
        } catch (const std::exception& ex) {
            changes.log << tr("[%1] event %2 skipped: %3")
                               .arg(run.name)
                               .arg(static_cast<long long>(e.seq))
                               .arg(QString::fromUtf8(ex.what()));
        }
    }
    changes.new_metrics = run.series.series().size() != before;
    return changes;
}

QStringList RunModel::metric_names() const {
    std::set<std::string> seen;
    for (const auto& run : runs_)
        for (const auto& [name, s] : run->series.series())
            seen.insert(name);
    QStringList names;
    for (const auto& name : seen)
        names << qs(name);
    std::stable_sort(names.begin(), names.end(), [](const QString& a, const QString& b) {
        int ra = metric_rank(a), rb = metric_rank(b);
        return ra != rb ? ra < rb : a < b;
    });
    return names;
}

QString RunModel::progress_text(int run) const {
    const RunProgress& p = progress(run);
    if (p.total_steps <= 0) return {};
    QString text = tr("step %1/%2 · epoch %3/%4 · %5 it/s")
                       .arg(p.step)
                       .arg(p.total_steps)
                       .arg(p.epoch)  // from 1, as the trainer counts
                       .arg(p.epochs)
                       .arg(p.items_per_s, 0, 'f', 1);
    const auto state = try_parse_job_state(p.state.toStdString());
    const bool ended = state && is_final_state(*state);
    if (!ended && p.eta_s >= 0) text += tr(" · ETA %1").arg(format_duration(p.eta_s));
    return text;
}

}  // namespace crucible::ui
