#pragma once
// Where the run monitor's events come from, apart from the model (run_model.h) and the widgets
// (run_monitor.h): a run stored in the project, an events.jsonl followed as it grows, or a job of
// an agent followed live (SSE). Each source reads on another thread and hands its events to the
// GUI thread in seq order, in slices with the event loop running between them, so neither a run
// with a million stored events nor a burst from the network holds the GUI thread.
//
// cancel() and the destructor return at once, whatever the disk or the network does: nothing here
// joins or waits for a thread on the GUI thread (STYLE.md "Threads and the GUI"). A thread that is
// still reading ends on its own (an agent's stream is closed under it through net::StreamStop)
// and drops what it read.
//
// A run's place (a job folder here, or a job of an agent) is where its artifacts and stop requests
// go; those calls block and are meant for run_in_background (background.h).
#include <QImage>
#include <QObject>
#include <QString>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/base/event.h"
#include "core/base/json.h"
#include "core/net/api_client.h"
#include "ui/validation_report.h"

class QTimer;

namespace crucible::ui {

// Where a run's job folder is: on this computer, or on an agent.
struct RunPlace {
    std::filesystem::path folder;  // a job folder on this computer
    net::RemoteEndpoint endpoint;  // or a job of an agent
    std::string job;
    bool remote() const { return !job.empty(); }
    bool known() const { return remote() || !folder.empty(); }
};

// Blocking calls on a run's place (run them off the GUI thread). Names are relative to the job
// folder (JobFolder's layout), as the agent's artifact routes take them; a name that leaves the
// folder is refused (InputError).
//
// The bytes of one file: read in place, or downloaded from the agent into a temporary folder.
std::string read_run_file(const RunPlace& place, const std::string& name, std::uint64_t max_bytes);
// The run's validation report; found = false when it has none (yet).
struct FetchedReport {
    bool found = false;
    QString source;  // where it was read
    ValidationData data;
};
FetchedReport fetch_validation_report(const RunPlace& place);
// The picture of a `sample` event (`artifact` relative to artifacts/, refused when it leaves it);
// a null image when the file is not a picture.
QImage fetch_sample_picture(const RunPlace& place, const std::string& artifact);
// Asks the run's agent to pause, resume or cancel its job.
void send_control(const RunPlace& place, net::JobAction action);

// One source of a run's events.
class RunSource : public QObject {
    Q_OBJECT
  public:
    // The most events handed to the GUI thread at once: a few milliseconds of work there. While
    // a run of 1,000,000 stored events opens, the longest GUI-thread stall was 33 ms on a busy
    // 2-core machine (tests/ui/watchdog_test.cpp prints it); read at once, it was 5 s.
    static constexpr std::size_t kSlice = 2048;

    ~RunSource() override;

    // Starts reading; connect the signals first.
    virtual void start() = 0;
    // Stops at once: nothing is emitted after it, and no thread is waited for.
    void cancel();
    bool cancelled() const { return cancelled_; }
    // Everything the source will deliver was emitted (a stored run read to its end, a stream the
    // agent closed), or it failed or was cancelled.
    bool finished() const { return finished_; }
    // Where the run's job folder is (unknown for a stored run).
    virtual RunPlace place() const { return {}; }

    // Source threads of this process still running; they end on their own after cancel().
    static int running_threads();

  signals:
    void arrived(const std::vector<Event>& events);  // in seq order
    void problem(const QString& message);            // for the run's log
    void ended();                                    // after the last `arrived`

  protected:
    explicit RunSource(QObject* parent);
    // GUI thread: queues events; they are emitted in slices of at most kSlice.
    void deliver(std::vector<Event> events);
    // GUI thread: nothing follows the events queued so far.
    void finish();
    std::size_t queued() const { return queue_.size(); }
    // GUI thread: fewer than kSlice events wait; a source that reads on demand reads on.
    virtual void wants_more() {}
    virtual void on_cancel() {}

  private:
    void schedule_slice();
    void emit_slice();

    std::deque<Event> queue_;
    bool slice_scheduled_ = false;
    bool finishing_ = false;
    bool finished_ = false;
    bool cancelled_ = false;
};

// A run of the project: its stored events, read kSlice at a time through a read-only connection
// of its own (the GUI thread's connection is never used off it), the next slice only once the
// last one was handed over, so memory stays bounded however long the run.
class StoredRunSource : public RunSource {
    Q_OBJECT
  public:
    StoredRunSource(std::filesystem::path project, std::int64_t run_id, QObject* parent = nullptr);
    ~StoredRunSource() override;
    void start() override;

  protected:
    void wants_more() override;

  private:
    struct Reader;
    void read_next();
    std::shared_ptr<Reader> reader_;
    bool busy_ = false;
    bool at_end_ = false;
};

// An events.jsonl followed as it grows, read in the background every `interval_ms`.
class EventsFileSource : public RunSource {
    Q_OBJECT
  public:
    EventsFileSource(std::filesystem::path events_jsonl, int interval_ms,
                     QObject* parent = nullptr);
    void start() override;
    RunPlace place() const override;

  protected:
    void on_cancel() override;

  private:
    void poll();
    std::filesystem::path file_;
    QTimer* timer_ = nullptr;
    std::int64_t after_ = -1;
    bool busy_ = false;
};

// A job of an agent, live after `after_seq`: ApiClient::follow_events (reconnecting with backoff)
// on a thread of its own that owns its state through a shared pointer and is never joined.
// cancel() closes the connection under it, so even an agent that stalls without a byte lets the
// thread end at once.
class AgentRunSource : public RunSource {
    Q_OBJECT
  public:
    AgentRunSource(net::RemoteEndpoint endpoint, std::string job, std::int64_t after_seq,
                   QObject* parent = nullptr);
    ~AgentRunSource() override;
    void start() override;
    RunPlace place() const override;

  protected:
    void on_cancel() override;

  private:
    struct Link;
    net::RemoteEndpoint endpoint_;
    std::string job_;
    std::int64_t after_seq_;
    std::shared_ptr<Link> link_;
};

}  // namespace crucible::ui
