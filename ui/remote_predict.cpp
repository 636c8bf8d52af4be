#include "ui/remote_predict.h"

#include <QCoreApplication>
#include <QTimer>

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_state.h"
#include "core/net/job_inputs.h"
#include "ui/background.h"

namespace crucible::ui {

namespace fs = std::filesystem;

namespace {

// The command every pre-labelling job runs, and how often its progress is asked for.
constexpr const char* kCommand = "predict";
constexpr int kPollMilliseconds = 1000;
constexpr int kGiveUpMilliseconds = 60000;  // the server unreachable this long ends it

// "key=value" words as JSON option values (numbers and booleans typed, the rest text).
void add_words(Json& options, const QStringList& words) {
    for (const QString& word : words) {
        const auto eq = word.indexOf(QLatin1Char('='));
        if (eq <= 0) continue;
        const std::string value = word.mid(eq + 1).toStdString();
        Json parsed = Json::parse(value, nullptr, /*allow_exceptions=*/false);
        options[word.left(eq).toStdString()] = parsed.is_discarded() ? Json(value) : parsed;
    }
}

struct Poll {
    JobState state = JobState::Queued;
    std::string reason;
    std::vector<std::string> labels;  // the label files written so far
};

}  // namespace

RemotePredict::RemotePredict(net::RemoteEndpoint endpoint, QString server, QString task,
                             fs::path weights, std::vector<fs::path> images, QStringList extra_args,
                             QObject* parent)
    : Predictor(std::move(images), parent),
      endpoint_(std::move(endpoint)),
      server_(std::move(server)),
      task_(std::move(task)),
      weights_(std::move(weights)),
      extra_args_(std::move(extra_args)) {}

RemotePredict::~RemotePredict() = default;

void RemotePredict::start() {
    if (!stage()) return;
    Json options = command_options(weights_);
    add_words(options, extra_args_);
    emit progress(0, static_cast<int>(images_.size()));
    const auto endpoint = endpoint_;
    const std::string task = task_.toStdString();
    const QString server = server_;
    run_in_background<std::string>(
        this,
        [endpoint, task, options, server]() mutable {
            net::ApiClient client(endpoint);
            const Json schema = net::find_command_schema(client.info().tasks, task, kCommand);
            if (schema.is_null())
                throw Error(tr("the agent on %1 cannot predict for pre-labelling (update it)")
                                .arg(server)
                                .toStdString());
            net::SubmitRequest request;
            request.task = task;
            request.command = kCommand;
            request.name = "pre-labelling";
            request.options = net::upload_local_inputs(client, schema, std::move(options));
            return client.submit(request).id;
        },
        [this](std::string job, QString error) {
            job_ = std::move(job);
            if (canceled_) return cancel_job();  // canceled while it was being submitted
            if (!error.isEmpty()) return fail(tr("on %1: %2").arg(server_, error));
            timer_ = new QTimer(this);
            connect(timer_, &QTimer::timeout, this, &RemotePredict::poll);
            timer_->start(kPollMilliseconds);
        });
}

void RemotePredict::poll() {
    if (polling_ || finished()) return;
    polling_ = true;
    const auto endpoint = endpoint_;
    const std::string job = job_;
    run_in_background<Poll>(
        this,
        [endpoint, job] {
            net::ApiClient client(endpoint);
            Poll p;
            const auto info = client.job(job);
            p.state = info.state;
            p.reason = info.reason;
            for (const auto& a : client.artifacts(job))
                if (a.path.find("/labels/") != std::string::npos) p.labels.push_back(a.path);
            return p;
        },
        [this](Poll p, QString error) {
            polling_ = false;
            if (finished()) return;
            if (!error.isEmpty()) {  // a missed poll: the next one asks again, for a while
                if (++failed_polls_ * kPollMilliseconds >= kGiveUpMilliseconds) {
                    timer_->stop();
                    fail(tr("lost %1 (the job %2 may still run there): %3")
                             .arg(server_, QString::fromStdString(job_), error));
                }
                return;
            }
            failed_polls_ = 0;
            emit progress(static_cast<int>(p.labels.size()), static_cast<int>(images_.size()));
            // Paused by someone on the server: it will not end by itself.
            if (!is_final_state(p.state) && p.state != JobState::Paused) return;
            timer_->stop();
            if (p.state != JobState::Succeeded)
                return fail(tr("the job %1 on %2 %3: %4")
                                .arg(QString::fromStdString(job_), server_,
                                     QString::fromUtf8(job_state_name(p.state)),
                                     QString::fromStdString(p.reason)));
            fetch_results();
        });
}

void RemotePredict::fetch_results() {
    const auto endpoint = endpoint_;
    const std::string job = job_;
    const fs::path labels = work_folder() / "labels";
    std::vector<fs::path> wanted;
    for (std::size_t i = 0; i < images_.size(); ++i)
        wanted.push_back(staged_label_name(i, images_[i]));
    run_in_background<bool>(
        this,
        [endpoint, job, labels, wanted] {
            net::ApiClient client(endpoint);
            fs::create_directories(labels);
            for (const auto& a : client.artifacts(job)) {
                const auto slash = a.path.rfind('/');
                if (slash == std::string::npos || a.path.find("/labels/") == std::string::npos)
                    continue;
                const fs::path name = path_from_utf8(a.path.substr(slash + 1));
                if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
                client.download(job, a.path, labels / name, /*overwrite=*/true);
            }
            return true;
        },
        [this, labels](bool, QString error) {
            if (finished()) return;
            if (!error.isEmpty()) return fail(tr("on %1: %2").arg(server_, error));
            read_labels(labels);
            succeed();
        });
}

void RemotePredict::cancel() {
    if (finished()) return;
    canceled_ = true;
    if (timer_) timer_->stop();
    cancel_job();
    fail(tr("canceled"));
}

void RemotePredict::cancel_job() {
    if (job_.empty()) return;  // not submitted (yet: the submission's answer comes back here)
    const auto endpoint = endpoint_;
    const std::string job = job_;
    // Nobody waits for the answer: the studio stops looking, the agent stops the job.
    run_in_background<bool>(
        QCoreApplication::instance(),
        [endpoint, job] {
            net::ApiClient(endpoint).control(job, net::JobAction::Cancel);
            return true;
        },
        [](bool, QString) {});
}

}  // namespace crucible::ui
