#include "core/store/run_store.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_state.h"
#include "core/store/packed_values.h"

namespace crucible::store {

namespace {

std::string json_text(const Json& j) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void check_run_exists(Project& project, std::int64_t run_id) {
    auto s = project.db().prepare("SELECT 1 FROM runs WHERE id = ?");
    s.bind(1, run_id);
    if (!s.step()) throw InputError("run", "no run with id " + std::to_string(run_id));
}

std::optional<std::int64_t> integer_field(const Json& fields, const char* name) {
    auto it = fields.find(name);
    if (it == fields.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<std::int64_t>();
}

// Id of a metric name, inserted when new (inside the caller's transaction).
std::int64_t metric_name_id(Project& project, Statement& insert, Statement& select,
                            const std::string& name) {
    auto& cache = project.metric_name_ids();
    if (auto it = cache.find(name); it != cache.end()) return it->second;
    insert.bind(1, name).run();
    select.bind(1, name);
    if (!select.step()) throw Error("metric name '" + name + "' vanished");
    std::int64_t id = select.column_int64(0);
    select.reset();
    cache.emplace(name, id);
    return id;
}

}  // namespace

std::int64_t create_run(Project& project, const RunSetup& setup) {
    project.require_writable("create a run");
    if (setup.task.empty()) throw InputError("task", "a run needs a task");
    Database& db = project.db();
    std::string dataset_hash = setup.dataset_hash;
    if (setup.dataset_id && dataset_hash.empty()) {
        auto s = db.prepare("SELECT version_hash FROM datasets WHERE id = ?");
        s.bind(1, *setup.dataset_id);
        if (!s.step())
            throw InputError("dataset", "no dataset with id " + std::to_string(*setup.dataset_id));
        dataset_hash = s.column_text(0);
    }
    double now = unix_time_now();
    Transaction tx(db);
    db.prepare(
          "INSERT INTO runs(name, task, options, dataset_id, dataset_hash, server, peers, "
          "remote_job_id, state, created_at, updated_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind_all(setup.name, setup.task, json_text(setup.options), setup.dataset_id, dataset_hash,
                  setup.server, json_text(Json(setup.peers)), setup.remote_job_id, setup.state, now,
                  now)
        .run();
    std::int64_t id = db.last_insert_rowid();
    tx.commit();
    return id;
}

void update_run_state(Project& project, std::int64_t run_id, const std::string& state,
                      const std::optional<std::string>& remote_job_id) {
    project.require_writable("update a run");
    check_run_exists(project, run_id);
    auto s = project.db().prepare(
        "UPDATE runs SET state = ?, remote_job_id = coalesce(?, remote_job_id), updated_at = ? "
        "WHERE id = ?");
    s.bind_all(state, remote_job_id, unix_time_now(), run_id).run();
}

void delete_run(Project& project, std::int64_t run_id) {
    project.require_writable("delete a run");
    check_run_exists(project, run_id);
    Transaction tx(project.db());
    project.db().prepare("DELETE FROM runs WHERE id = ?").bind_all(run_id).run();  // cascades
    tx.commit();
    std::error_code ec;  // the record is gone; files that resist removal are only files
    std::filesystem::remove_all(run_files_folder(project, run_id), ec);
}

std::int64_t delete_run_history_slice(Project& project, std::int64_t run_id,
                                      std::int64_t max_rows) {
    project.require_writable("delete a run");
    Transaction tx(project.db());
    std::int64_t gone = 0;
    for (const char* table : {"run_events", "run_points"}) {
        if (gone >= max_rows) break;
        gone += project.db()
                    .prepare(std::string("DELETE FROM ") + table +
                             " WHERE run_id = ?1 AND seq IN (SELECT seq FROM " + table +
                             " WHERE run_id = ?1 ORDER BY seq LIMIT ?2)")
                    .bind_all(run_id, max_rows - gone)
                    .run();
    }
    tx.commit();
    return gone;
}

std::filesystem::path run_files_folder(const Project& project, std::int64_t run_id) {
    std::filesystem::path beside = project.path().stem();  // a path: non-ASCII names survive
    beside += ".runs";
    return project.folder() / beside / ("run-" + std::to_string(run_id));
}

namespace {
constexpr const char* kRunSelect = R"sql(
SELECT r.id, r.name, r.task, r.options, r.dataset_id, r.dataset_hash, r.server,
       r.remote_job_id, r.state, r.created_at, r.updated_at, r.event_count, r.last_seq, r.peers
FROM runs r )sql";

// The peers column as written by create_run; a project file edited by hand is outside input.
std::vector<std::string> read_peers(std::string_view text, std::int64_t run_id) {
    const std::string where = "run " + std::to_string(run_id) + ": peers";
    const Json peers = parse_json(text, where);
    if (!peers.is_array()) throw InputError(where, "must be a list of server names");
    std::vector<std::string> names;
    for (const Json& name : peers) {
        if (!name.is_string() || name.get_ref<const std::string&>().empty())
            throw InputError(where, "must be a list of server names");
        names.push_back(name.get<std::string>());
    }
    return names;
}

RunInfo read_run(Statement& s) {
    RunInfo r;
    r.id = s.column_int64(0);
    r.setup.name = s.column_text(1);
    r.setup.task = s.column_text(2);
    r.setup.options = parse_json(s.column_text_view(3), "run options");
    if (!s.is_null(4)) r.setup.dataset_id = s.column_int64(4);
    r.setup.dataset_hash = s.column_text(5);
    r.setup.server = s.column_text(6);
    r.setup.remote_job_id = s.column_text(7);
    r.setup.state = s.column_text(8);
    r.created_at = s.column_double(9);
    r.updated_at = s.column_double(10);
    r.events = s.column_int64(11);
    r.last_seq = s.column_int64(12);
    r.setup.peers = read_peers(s.column_text_view(13), r.id);
    return r;
}
}  // namespace

std::vector<RunInfo> list_runs(Project& project) {
    std::vector<RunInfo> out;
    auto s = project.db().prepare(std::string(kRunSelect) + "ORDER BY r.id");
    while (s.step())
        out.push_back(read_run(s));
    return out;
}

RunInfo get_run(Project& project, std::int64_t run_id) {
    auto s = project.db().prepare(std::string(kRunSelect) + "WHERE r.id = ?");
    s.bind(1, run_id);
    if (!s.step()) throw InputError("run", "no run with id " + std::to_string(run_id));
    return read_run(s);
}

std::size_t append_events(Project& project, std::int64_t run_id, const std::vector<Event>& events) {
    project.require_writable("store run events");
    check_run_exists(project, run_id);
    for (const auto& e : events)
        if (e.seq < 0) throw InputError("event", "event without a seq cannot be stored");
    Database& db = project.db();
    std::size_t stored = 0;
    try {
        Transaction tx(db);
        auto add_event = db.prepare(
            "INSERT OR IGNORE INTO run_events(run_id, seq, t, kind, record) VALUES(?, ?, ?, ?, ?)");
        auto add_point = db.prepare(
            "INSERT OR IGNORE INTO run_points(run_id, seq, step, epoch, t, vals) "
            "VALUES(?, ?, ?, ?, ?, ?)");
        auto add_name = db.prepare("INSERT OR IGNORE INTO metric_names(name) VALUES(?)");
        auto find_name = db.prepare("SELECT id FROM metric_names WHERE name = ?");
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::string vals;
        std::int64_t last_seq = -1;
        auto stored_before = db.prepare("SELECT last_seq FROM runs WHERE id = ?");
        stored_before.bind(1, run_id);
        const std::int64_t seq_before = stored_before.step() ? stored_before.column_int64(0) : -1;
        std::int64_t status_seq = seq_before;
        std::optional<JobState> status;
        for (const auto& e : events) {
            if (add_event.bind_all(run_id, e.seq, e.t, e.kind, event_to_line(e)).run() == 0)
                continue;  // this seq is stored already
            ++stored;
            last_seq = std::max(last_seq, e.seq);
            if (e.kind == event_kind::kStatus && e.seq > status_seq) {
                const auto state = e.fields.find("state");
                if (state != e.fields.end() && state->is_string())
                    if (const auto known = try_parse_job_state(state->get<std::string>())) {
                        status = known;
                        status_seq = e.seq;
                    }
            }
            if (e.kind != event_kind::kMetric && e.kind != event_kind::kEval) continue;
            auto values = e.fields.find("values");
            if (values == e.fields.end() || !values->is_object()) continue;
            vals.clear();
            for (auto it = values->begin(); it != values->end(); ++it) {
                if (!it.value().is_number() && !it.value().is_null()) continue;
                const std::int64_t name_id = metric_name_id(project, add_name, find_name, it.key());
                const double v = it.value().is_number() ? it.value().get<double>() : nan;
                append_packed_value(vals, static_cast<std::uint32_t>(name_id),
                                    std::isfinite(v) ? v : nan);
            }
            if (vals.empty()) continue;
            add_point
                .bind_all(run_id, e.seq, integer_field(e.fields, "step"),
                          integer_field(e.fields, "epoch"), e.t)
                .bind_blob(6, vals)
                .run();
        }
        if (stored > 0)
            db.prepare(
                  "UPDATE runs SET event_count = event_count + ?, last_seq = max(last_seq, ?) "
                  "WHERE id = ?")
                .bind_all(static_cast<std::int64_t>(stored), last_seq, run_id)
                .run();
        if (status)
            db.prepare("UPDATE runs SET state = ?, updated_at = ? WHERE id = ?")
                .bind_all(std::string(job_state_name(*status)), unix_time_now(), run_id)
                .run();
        tx.commit();
    } catch (...) {
        project.metric_name_ids().clear();  // ids from a rolled-back transaction are gone
        throw;
    }
    return stored;
}

std::vector<Event> read_events(Project& project, std::int64_t run_id, std::int64_t after_seq,
                               std::int64_t max_events) {
    std::vector<Event> out;
    auto s = project.db().prepare(
        "SELECT seq, record FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?");
    s.bind_all(run_id, after_seq, max_events);  // SQLite reads a negative LIMIT as none
    while (s.step()) {
        std::string where =
            "run " + std::to_string(run_id) + " seq " + std::to_string(s.column_int64(0));
        out.push_back(event_from_json(parse_json(s.column_text_view(1), where), where));
    }
    return out;
}

std::int64_t last_event_seq(Project& project, std::int64_t run_id) {
    auto s = project.db().prepare("SELECT max(seq) FROM run_events WHERE run_id = ?");
    s.bind(1, run_id);
    if (!s.step() || s.is_null(0)) return -1;
    return s.column_int64(0);
}

std::map<std::string, Series> read_series(Project& project, std::int64_t run_id) {
    Database& db = project.db();
    // Rollbacks (few): bound[i] = smallest to_step of rollback i and every later one.
    std::vector<std::int64_t> rb_seq, rb_bound;
    {
        auto s = db.prepare(
            // The partial index holds only rollbacks; without it this would read every record.
            "SELECT seq, record FROM run_events INDEXED BY run_events_rollbacks "
            "WHERE run_id = ? AND kind = 'rollback' ORDER BY seq");
        s.bind(1, run_id);
        while (s.step()) {
            Json j = parse_json(s.column_text_view(1), "rollback event");
            rb_seq.push_back(s.column_int64(0));
            rb_bound.push_back(j.value("to_step", std::int64_t{0}));
        }
        for (std::size_t i = rb_bound.size(); i-- > 1;)
            rb_bound[i - 1] = std::min(rb_bound[i - 1], rb_bound[i]);
    }
    std::unordered_map<std::int64_t, std::string> names;
    std::int64_t max_name_id = 0;
    {
        auto s = db.prepare("SELECT id, name FROM metric_names");
        while (s.step()) {
            names[s.column_int64(0)] = s.column_text(1);
            max_name_id = std::max(max_name_id, s.column_int64(0));
        }
    }
    // Rows are stored in (run, seq) order: one sequential scan, each value dispatched by name id.
    std::map<std::string, Series> out;
    std::vector<Series*> by_id(static_cast<std::size_t>(max_name_id) + 1, nullptr);
    auto s = db.prepare(
        "SELECT seq, step, epoch, t, vals FROM run_points WHERE run_id = ? ORDER BY seq");
    s.bind(1, run_id);
    std::size_t rb = 0;  // first rollback with seq > the row's seq
    while (s.step()) {
        const std::int64_t seq = s.column_int64(0);
        while (rb < rb_seq.size() && rb_seq[rb] <= seq)
            ++rb;
        const std::int64_t step = s.is_null(1) ? -1 : s.column_int64(1);
        if (rb < rb_seq.size() && step >= 0 && step > rb_bound[rb]) continue;  // superseded
        const std::int64_t epoch = s.is_null(2) ? -1 : s.column_int64(2);
        const double t = s.column_double(3);
        for_each_packed_value(s.column_blob_view(4), [&](std::uint32_t name_id, double value) {
            if (static_cast<std::int64_t>(name_id) > max_name_id) return;  // added since
            Series*& series = by_id[name_id];
            if (!series) series = &out[names[name_id]];
            series->step.push_back(step);
            series->epoch.push_back(epoch);
            series->t.push_back(t);
            series->value.push_back(value);
        });
    }
    return out;
}

std::vector<LegacyServer> legacy_servers(Project& project) {
    std::vector<LegacyServer> out;
    auto s = project.db().prepare("SELECT name, url, tls_fingerprint FROM servers ORDER BY id");
    while (s.step())
        out.push_back({s.column_text(0), s.column_text(1), s.column_text(2)});
    return out;
}

void rename_run_server(Project& project, const std::string& from, const std::string& to) {
    project.require_writable("rename a run's server");
    project.db().prepare("UPDATE runs SET server = ? WHERE server = ?").bind_all(to, from).run();
}

void forget_legacy_server(Project& project, const std::string& name) {
    project.require_writable("forget a server");
    project.db().prepare("DELETE FROM servers WHERE name = ?").bind_all(name).run();
}

void save_preset(Project& project, const std::string& task, const std::string& name,
                 const Json& options) {
    project.require_writable("save a preset");
    if (name.empty()) throw InputError("preset name", "a preset needs a name");
    project.db()
        .prepare(
            "INSERT INTO presets(task, name, options, updated_at) VALUES(?, ?, ?, ?) "
            "ON CONFLICT(task, name) DO UPDATE SET options = excluded.options, "
            "updated_at = excluded.updated_at")
        .bind_all(task, name, json_text(options), unix_time_now())
        .run();
}

std::map<std::string, Json> list_presets(Project& project, const std::string& task) {
    std::map<std::string, Json> out;
    auto s = project.db().prepare("SELECT name, options FROM presets WHERE task = ? ORDER BY name");
    s.bind(1, task);
    while (s.step())
        out[s.column_text(0)] = parse_json(s.column_text_view(1), "preset options");
    return out;
}

}  // namespace crucible::store
