#include "ui/run_source.h"

#include <QCoreApplication>
#include <QPointer>
#include <QTemporaryDir>
#include <QTimer>
#include <chrono>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "ui/background.h"
#include "ui/run_model.h"

namespace crucible::ui {

namespace {

constexpr std::uint64_t kMaxReportBytes = 256ull << 20;
constexpr std::uint64_t kMaxPictureBytes = 64ull << 20;

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

// A relative name that stays inside the folder it is relative to (no root, no "..").
bool stays_inside(const std::string& name) {
    const auto p = path_from_utf8(name).lexically_normal();
    return !p.empty() && p.is_relative() && !p.has_root_name() && *p.begin() != "..";
}

// The source threads still running. Each thread holds the count, so it outlives the statics; at
// exit (after main() returned, never on the GUI thread's way) the process waits a moment for
// threads cancelled just before, so none is still unwinding while statics are torn down.
struct ThreadCount {
    std::mutex mutex;
    std::condition_variable idle;
    int running = 0;
    void enter() {
        std::lock_guard<std::mutex> lock(mutex);
        ++running;
    }
    void leave() {
        std::lock_guard<std::mutex> lock(mutex);
        if (--running == 0) idle.notify_all();
    }
};

struct Reaper {
    std::shared_ptr<ThreadCount> threads = std::make_shared<ThreadCount>();
    ~Reaper() {
        std::unique_lock<std::mutex> lock(threads->mutex);
        threads->idle.wait_for(lock, std::chrono::seconds(2),
                               [this] { return threads->running == 0; });
    }
};

Reaper& reaper() {
    static Reaper instance;
    return instance;
}

}  // namespace

std::string read_run_file(const RunPlace& place, const std::string& name, std::uint64_t max_bytes) {
    if (!stays_inside(name)) throw InputError(name, "refused: the name leaves the job folder");
    if (!place.remote()) {
        if (place.folder.empty()) throw Error("the run's folder is not known: " + name);
        const auto local = place.folder / path_from_utf8(name);
        if (!is_path_inside(place.folder, local))
            throw InputError(name, "refused: the name leaves the job folder");
        return read_file_bytes_limited(local, max_bytes);
    }
    QTemporaryDir folder;
    if (!folder.isValid()) throw Error("no temporary folder for " + name);
    const auto file = path_from_utf8(folder.path().toStdString()) / "download";
    net::ApiClient(place.endpoint).download(place.job, name, file, /*overwrite=*/true);
    return read_file_bytes_limited(file, max_bytes);
}

FetchedReport fetch_validation_report(const RunPlace& place) {
    const std::string standard = path_to_generic_utf8(JobFolder{}.validation_report());
    std::string name;
    if (place.remote()) {
        // The agent lists what the job made; artifacts/val_metrics.json first, else any report.
        for (const auto& artifact : net::ApiClient(place.endpoint).artifacts(place.job)) {
            const std::string& p = artifact.path;
            if (p == standard) {
                name = p;
                break;
            }
            if (name.empty() && names_validation_report(p)) name = p;
        }
    } else if (!place.folder.empty()) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(JobFolder{place.folder}.validation_report(), ec))
            name = standard;
    }
    if (name.empty()) return {};
    FetchedReport out;
    out.found = true;
    out.source =
        place.remote() ? qs(name) : qs(path_to_utf8(JobFolder{place.folder}.validation_report()));
    out.data = parse_validation_report(parse_json(read_run_file(place, name, kMaxReportBytes),
                                                  path_to_utf8(path_from_utf8(name))));
    return out;
}

QImage fetch_sample_picture(const RunPlace& place, const std::string& artifact) {
    // Artifact names are relative to artifacts/ (the agent refuses the rest itself too).
    if (!stays_inside(artifact)) throw InputError(artifact, "refused: the name leaves artifacts/");
    const std::string name = path_to_generic_utf8(JobFolder{}.artifacts()) + "/" + artifact;
    const std::string bytes = read_run_file(place, name, kMaxPictureBytes);
    return QImage::fromData(reinterpret_cast<const uchar*>(bytes.data()),
                            static_cast<int>(bytes.size()));
}

void send_control(const RunPlace& place, net::JobAction action) {
    if (!place.remote()) throw Error("this run is not running on a server");
    net::ApiClient(place.endpoint).control(place.job, action);
}

// ---------------------------------------------------------------------------------------------

RunSource::RunSource(QObject* parent) : QObject(parent) {}

RunSource::~RunSource() = default;

int RunSource::running_threads() {
    auto& threads = *reaper().threads;
    std::lock_guard<std::mutex> lock(threads.mutex);
    return threads.running;
}

void RunSource::cancel() {
    if (cancelled_) return;
    cancelled_ = true;
    finished_ = true;
    queue_.clear();
    on_cancel();
}

void RunSource::deliver(std::vector<Event> events) {
    if (cancelled_ || events.empty()) return;
    queue_.insert(queue_.end(), std::make_move_iterator(events.begin()),
                  std::make_move_iterator(events.end()));
    schedule_slice();
}

void RunSource::finish() {
    if (cancelled_) return;
    finishing_ = true;
    schedule_slice();
}

void RunSource::schedule_slice() {
    if (slice_scheduled_ || cancelled_) return;
    slice_scheduled_ = true;
    // A zero timer, not a queued call: the event loop (input, painting, other timers) runs
    // before the next slice.
    QTimer::singleShot(0, this, [this] {
        slice_scheduled_ = false;
        emit_slice();
    });
}

void RunSource::emit_slice() {
    if (cancelled_) return;
    QPointer<RunSource> alive(this);
    if (!queue_.empty()) {
        const auto n = static_cast<std::ptrdiff_t>(std::min(kSlice, queue_.size()));
        std::vector<Event> slice(std::make_move_iterator(queue_.begin()),
                                 std::make_move_iterator(queue_.begin() + n));
        queue_.erase(queue_.begin(), queue_.begin() + n);
        emit arrived(slice);
        if (!alive || cancelled_) return;
    }
    if (!queue_.empty()) schedule_slice();
    if (queue_.size() >= kSlice) return;
    if (!finishing_) {
        wants_more();
    } else if (queue_.empty() && !finished_) {
        finished_ = true;
        emit ended();
    }
}

// ---------------------------------------------------------------------------------------------

struct StoredRunSource::Reader {
    std::filesystem::path project;
    std::int64_t run_id = 0;
    std::int64_t after = -1;
    // Opened on first use, off the GUI thread; used by one background call at a time.
    std::unique_ptr<store::Project> db;

    std::vector<Event> next(std::size_t count) {
        if (!db) db = store::Project::open_for_reading(project);
        auto events = store::read_events(*db, run_id, after, static_cast<std::int64_t>(count));
        if (!events.empty()) after = events.back().seq;
        return events;
    }
};

StoredRunSource::StoredRunSource(std::filesystem::path project, std::int64_t run_id,
                                 QObject* parent)
    : RunSource(parent), reader_(std::make_shared<Reader>()) {
    reader_->project = std::move(project);
    reader_->run_id = run_id;
}

StoredRunSource::~StoredRunSource() {
    cancel();
}

void StoredRunSource::start() {
    read_next();
}

void StoredRunSource::wants_more() {
    if (!busy_ && !at_end_) read_next();
}

void StoredRunSource::read_next() {
    busy_ = true;
    auto reader = reader_;
    run_in_background<std::vector<Event>>(
        this, [reader] { return reader->next(kSlice); },
        [this](std::vector<Event> events, QString error) {
            busy_ = false;
            if (cancelled()) return;
            if (!error.isEmpty()) {
                at_end_ = true;
                emit problem(tr("cannot read the stored events: %1").arg(error));
                finish();
                return;
            }
            at_end_ = events.size() < kSlice;
            deliver(std::move(events));
            if (at_end_)
                finish();
            else if (queued() <= kSlice)
                read_next();  // reads the next slice while this one is applied
        });
}

// ---------------------------------------------------------------------------------------------

EventsFileSource::EventsFileSource(std::filesystem::path events_jsonl, int interval_ms,
                                   QObject* parent)
    : RunSource(parent), file_(std::move(events_jsonl)) {
    timer_ = new QTimer(this);
    timer_->setInterval(interval_ms);
    connect(timer_, &QTimer::timeout, this, &EventsFileSource::poll);
}

void EventsFileSource::start() {
    timer_->start();
    poll();
}

RunPlace EventsFileSource::place() const {
    RunPlace p;
    p.folder = file_.parent_path();
    return p;
}

void EventsFileSource::on_cancel() {
    timer_->stop();
}

void EventsFileSource::poll() {
    if (busy_ || cancelled() || queued() >= kSlice) return;
    busy_ = true;
    const auto path = file_;
    const auto after = after_;
    run_in_background<std::vector<Event>>(
        this,
        [path, after] {
            if (!std::filesystem::exists(path)) return std::vector<Event>{};
            return read_event_log(path, after);
        },
        [this](std::vector<Event> events, QString error) {
            busy_ = false;
            if (cancelled()) return;
            if (!error.isEmpty()) {
                emit problem(tr("cannot read events: %1").arg(error));
                return;
            }
            if (events.empty()) return;
            after_ = events.back().seq;
            deliver(std::move(events));
        });
}

// ---------------------------------------------------------------------------------------------

struct AgentRunSource::Link {
    net::StreamStop stop;
    std::mutex mutex;
    std::vector<Event> pending;  // read, not yet taken by the GUI thread
    bool posted = false;         // a call that takes them is on its way
};

AgentRunSource::AgentRunSource(net::RemoteEndpoint endpoint, std::string job,
                               std::int64_t after_seq, QObject* parent)
    : RunSource(parent),
      endpoint_(std::move(endpoint)),
      job_(std::move(job)),
      after_seq_(after_seq) {}

AgentRunSource::~AgentRunSource() {
    cancel();
}

RunPlace AgentRunSource::place() const {
    RunPlace p;
    p.endpoint = endpoint_;
    p.job = job_;
    return p;
}

void AgentRunSource::on_cancel() {
    if (link_) link_->stop.request();  // returns at once; the thread ends on its own
}

void AgentRunSource::start() {
    if (link_ || cancelled()) return;
    link_ = std::make_shared<Link>();
    auto threads = reaper().threads;
    threads->enter();
    std::thread([link = link_, owner = QPointer<AgentRunSource>(this), threads,
                 endpoint = endpoint_, job = job_, after = after_seq_] {
        // Hands what was read to the GUI thread. Posted to the application object and checked
        // there, like run_in_background, so a source deleted meanwhile is never touched.
        auto post = [&](bool end, const QString& problem) {
            if (link->stop.requested()) return;
            QCoreApplication* app = QCoreApplication::instance();
            if (!app) return;
            QMetaObject::invokeMethod(
                app,
                [link, owner, end, problem] {
                    std::vector<Event> events;
                    {
                        std::lock_guard<std::mutex> lock(link->mutex);
                        events.swap(link->pending);
                        link->posted = false;
                    }
                    if (!owner || link->stop.requested()) return;
                    owner->deliver(std::move(events));
                    if (!problem.isEmpty()) emit owner->problem(problem);
                    if (end) owner->finish();
                },
                Qt::QueuedConnection);
        };
        try {
            net::ApiClient client(endpoint);
            client.follow_events(
                job, after,
                [&](const Event& e) {
                    bool first = false;
                    {
                        std::lock_guard<std::mutex> lock(link->mutex);
                        link->pending.push_back(e);
                        first = !link->posted;
                        link->posted = true;
                    }
                    if (first) post(false, {});  // later events join the batch on its way
                    return !link->stop.requested();
                },
                &link->stop, std::chrono::seconds(10));
            post(true, {});
        } catch (const std::exception& e) {
            post(true, tr("event stream: %1").arg(QString::fromUtf8(e.what())));
        }
        threads->leave();
    }).detach();
}

}  // namespace crucible::ui
