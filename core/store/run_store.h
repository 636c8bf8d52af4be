#pragma once
// Runs inside a project: their setup (task, options, dataset version, server, remote job, state)
// and their history as received (DESIGN.md event records keyed by run and seq). Metric and eval
// values are also kept in a numeric table, so reading series for a plot never parses JSON.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/event.h"
#include "core/base/json.h"
#include "core/store/project.h"

namespace crucible::store {

struct RunSetup {
    std::string name;
    std::string task;               // "detect.yolo", "llm.lora", ...
    Json options = Json::object();  // the task's resolved options
    std::optional<std::int64_t> dataset_id;
    std::string dataset_hash;  // dataset version trained on; filled from the dataset if empty
    std::string server;  // its name in the user's server registry (net::RemoteConfig); "" = here
    // Other servers training ranks of the same run, by the names the server's agent gives its
    // peers (agent.json "cluster"); each takes as many ranks as `server`.
    std::vector<std::string> peers;
    std::string remote_job_id;
    std::string state = "draft";
};

struct RunInfo {
    std::int64_t id = 0;
    RunSetup setup;
    double created_at = 0, updated_at = 0;
    std::int64_t events = 0;
    std::int64_t last_seq = -1;
};

std::int64_t create_run(Project& project, const RunSetup& setup);
void update_run_state(Project& project, std::int64_t run_id, const std::string& state,
                      const std::optional<std::string>& remote_job_id = std::nullopt);
std::vector<RunInfo> list_runs(Project& project);
// Removes a run with its events and points and the folder of its files (run_files_folder), when
// it has one (InputError when missing). A job on a server is not touched: the run's record in
// this project is what goes.
void delete_run(Project& project, std::int64_t run_id);
// Deletes up to `max_rows` of a run's stored history (events and points), each call its own
// short transaction, and returns how many went; 0 when none is left. A run with a long history
// is emptied in slices this way, so no one transaction holds the file (or a GUI thread) for
// seconds; delete_run then removes the record.
std::int64_t delete_run_history_slice(Project& project, std::int64_t run_id, std::int64_t max_rows);
// The state of a run whose history is being deleted (shown, and finished on the next open).
inline constexpr const char* kDeletingState = "deleting";

// Where a finished run's files (weights, validation report, samples) are kept beside the
// project, so the run opens complete offline: <project folder>/<project stem>.runs/run-<id>/,
// in the job folder's layout.
std::filesystem::path run_files_folder(const Project& project, std::int64_t run_id);
RunInfo get_run(Project& project, std::int64_t run_id);  // InputError when missing

// Stores events in one transaction; an event whose (run, seq) is already stored is skipped, so
// replaying a stream after a reconnect stores each event once. Returns how many were new. The
// run's state follows its newest status event (a known job state, newer than every event stored
// before), so the project, the studio's tree and `crucible project runs` say what happened.
std::size_t append_events(Project& project, std::int64_t run_id, const std::vector<Event>& events);
// Events with seq > after_seq, in seq order, as received (rollbacks included); at most
// `max_events` of them when it is not negative, so a long run can be read in slices.
std::vector<Event> read_events(Project& project, std::int64_t run_id, std::int64_t after_seq = -1,
                               std::int64_t max_events = -1);
std::int64_t last_event_seq(Project& project, std::int64_t run_id);  // -1 when none

// One plotted series; points superseded by a later rollback are dropped (drop_superseded rules).
struct Series {
    std::vector<std::int64_t> step;   // -1 where the event had no step
    std::vector<std::int64_t> epoch;  // -1 where the event had no epoch
    std::vector<double> t;
    std::vector<double> value;  // NaN where the value was NaN/null
    std::size_t size() const { return value.size(); }
};

// Every series of a run by metric name ("train/box_loss", "metrics/mAP50(B)", ...).
std::map<std::string, Series> read_series(Project& project, std::int64_t run_id);

// The servers an older project kept itself (schema version 3 and before), for the studio to
// move into the user's registry once. Never a token: tokens live in the SecretStore.
struct LegacyServer {
    std::string name, url, tls_fingerprint;
};
std::vector<LegacyServer> legacy_servers(Project& project);
// Points every run of server `from` at `to` (a legacy server imported under another name).
void rename_run_server(Project& project, const std::string& from, const std::string& to);
// Drops a legacy server once it is in the registry.
void forget_legacy_server(Project& project, const std::string& name);

// Option presets.
void save_preset(Project& project, const std::string& task, const std::string& name,
                 const Json& options);
std::map<std::string, Json> list_presets(Project& project, const std::string& task);

}  // namespace crucible::store
