#include "core/store/schema.h"

#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/store/packed_values.h"

namespace crucible::store {

const char* schema_v1_ddl() {
    return R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE datasets(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL DEFAULT 'detection',
    source TEXT NOT NULL DEFAULT '',
    format TEXT NOT NULL DEFAULT '',
    version_hash TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL);
CREATE TABLE classes(
    dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY(dataset_id, idx)) WITHOUT ROWID;
CREATE TABLE images(
    id INTEGER PRIMARY KEY,
    dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    width INTEGER NOT NULL DEFAULT 0,
    height INTEGER NOT NULL DEFAULT 0,
    split TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '{}',
    UNIQUE(dataset_id, path));
CREATE TABLE boxes(
    id INTEGER PRIMARY KEY,
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    cls INTEGER NOT NULL,
    cx REAL NOT NULL, cy REAL NOT NULL, w REAL NOT NULL, h REAL NOT NULL);
CREATE INDEX boxes_image ON boxes(image_id);
CREATE TABLE chat_records(
    id INTEGER PRIMARY KEY,
    dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    record TEXT NOT NULL CHECK(json_valid(record)),
    UNIQUE(dataset_id, idx));
CREATE TABLE servers(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    url TEXT NOT NULL,
    tls_fingerprint TEXT NOT NULL DEFAULT '');
CREATE TABLE runs(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    task TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{}' CHECK(json_valid(options)),
    dataset_id INTEGER REFERENCES datasets(id) ON DELETE SET NULL,
    dataset_hash TEXT NOT NULL DEFAULT '',
    server_id INTEGER REFERENCES servers(id) ON DELETE SET NULL,
    remote_job_id TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT 'draft',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL);
CREATE TABLE run_events(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    t REAL NOT NULL,
    kind TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY(run_id, seq)) WITHOUT ROWID;
CREATE TABLE metric_names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE run_values(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name_id INTEGER NOT NULL REFERENCES metric_names(id),
    seq INTEGER NOT NULL,
    step INTEGER,
    epoch INTEGER,
    t REAL NOT NULL,
    value REAL,
    PRIMARY KEY(run_id, seq, name_id)) WITHOUT ROWID;
CREATE TABLE session_lock(
    id INTEGER PRIMARY KEY CHECK(id = 1),
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    opened_at REAL NOT NULL);
)sql";
}

namespace {

// Migration N upgrades version N to N+1: its DDL, then (where rows change shape) a conversion.
struct Migration {
    int from;
    const char* ddl;
    void (*convert)(Database&) = nullptr;
};

// Version 3 keeps an event's values in one packed row (run_points) instead of a row per value.
void copy_values_into_points(Database& db) {
    auto read = db.prepare(
        "SELECT run_id, seq, step, epoch, t, name_id, value FROM run_values "
        "ORDER BY run_id, seq, name_id");
    auto write = db.prepare(
        "INSERT INTO run_points(run_id, seq, step, epoch, t, vals) VALUES(?, ?, ?, ?, ?, ?)");
    std::int64_t run = -1, seq = -1;
    std::optional<std::int64_t> step, epoch;
    double t = 0;
    std::string vals;
    auto flush = [&] {
        if (!vals.empty()) write.bind_all(run, seq, step, epoch, t).bind_blob(6, vals).run();
        vals.clear();
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    while (read.step()) {
        if (read.column_int64(0) != run || read.column_int64(1) != seq) {
            flush();
            run = read.column_int64(0);
            seq = read.column_int64(1);
            step = read.is_null(2) ? std::nullopt : std::optional(read.column_int64(2));
            epoch = read.is_null(3) ? std::nullopt : std::optional(read.column_int64(3));
            t = read.column_double(4);
        }
        append_packed_value(vals, static_cast<std::uint32_t>(read.column_int64(5)),
                            read.is_null(6) ? nan : read.column_double(6));
    }
    flush();
}

void pack_run_values(Database& db) {
    copy_values_into_points(db);
    db.exec("DROP TABLE run_values");  // after the statements that read it are finalized
}

const std::vector<Migration>& migrations() {
    static const std::vector<Migration> list = {
        {1, R"sql(
ALTER TABLE images ADD COLUMN caption TEXT;
ALTER TABLE boxes ADD COLUMN difficult INTEGER NOT NULL DEFAULT 0;
CREATE TABLE presets(
    id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    name TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{}' CHECK(json_valid(options)),
    updated_at REAL NOT NULL,
    UNIQUE(task, name));
CREATE INDEX runs_dataset ON runs(dataset_id);
CREATE INDEX runs_server ON runs(server_id);
CREATE INDEX run_events_rollbacks ON run_events(run_id, seq) WHERE kind = 'rollback';
)sql"},
        {2, R"sql(
CREATE TABLE run_points(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    step INTEGER,
    epoch INTEGER,
    t REAL NOT NULL,
    vals BLOB NOT NULL,
    PRIMARY KEY(run_id, seq)) WITHOUT ROWID;
)sql",
         pack_run_values},
        // Version 4: servers live in the user's one registry (remotes.json, shared with the
        // CLI); a run names its server there. The servers table stays only to be imported once
        // by the studio (store::legacy_servers); server_id is no longer written.
        {3, R"sql(
ALTER TABLE runs ADD COLUMN server TEXT NOT NULL DEFAULT '';
UPDATE runs SET server = coalesce((SELECT name FROM servers WHERE servers.id = runs.server_id), '')
    WHERE server_id IS NOT NULL;
)sql"},
        // Version 5: a run keeps how many events it stored and its last seq, so listing runs
        // never counts a million rows (append_events keeps both up to date).
        {4, R"sql(
ALTER TABLE runs ADD COLUMN event_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN last_seq INTEGER NOT NULL DEFAULT -1;
UPDATE runs SET
    event_count = (SELECT count(*) FROM run_events e WHERE e.run_id = runs.id),
    last_seq = (SELECT coalesce(max(seq), -1) FROM run_events e WHERE e.run_id = runs.id);
)sql"},
        // Version 6: each run's summary for the run table (first/last/best of every metric,
        // its span in time), kept up to the seq it was computed at so opening a project of
        // hundreds of runs reads one row per run; store::summarize_runs refreshes stale rows.
        // A class may have a colour of its own ("#rrggbb"; '' = the studio's palette).
        {5, R"sql(
ALTER TABLE classes ADD COLUMN color TEXT NOT NULL DEFAULT '';
CREATE TABLE run_summaries(
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    summary TEXT NOT NULL CHECK(json_valid(summary)));
)sql"},
        // Version 7: the other servers a run trains on (a JSON list of the peer names its
        // server's agent knows), so a clone asks for the same servers.
        {6, R"sql(
ALTER TABLE runs ADD COLUMN peers TEXT NOT NULL DEFAULT '[]' CHECK(json_valid(peers));
)sql"},
    };
    return list;
}

std::string file_name(const Database& db) {
    return path_to_utf8(db.path());
}

}  // namespace

void create_schema(Database& db) {
    Transaction tx(db);
    db.exec(schema_v1_ddl());
    db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    db.exec("PRAGMA user_version = 1");
    auto put = db.prepare("INSERT INTO meta(key, value) VALUES(?, ?)");
    put.bind_all(std::string("format"), std::string(kProjectFormat)).run();
    put.bind_all(std::string("created_by"), std::string("Crucible " CRUCIBLE_VERSION)).run();
    put.bind_all(std::string("created_at"), std::to_string(unix_time_now())).run();
    tx.commit();
    migrate_schema(db);
}

int check_project_identity(Database& db) {
    // The first read fails with SQLITE_NOTADB for a file that is not SQLite at all.
    std::int64_t app_id = db.query_int("PRAGMA application_id").value_or(0);
    std::int64_t version = db.query_int("PRAGMA user_version").value_or(0);
    std::int64_t tables = db.query_int("SELECT count(*) FROM sqlite_schema").value_or(0);
    if (app_id != kApplicationId) {
        if (tables == 0 && app_id == 0)
            throw InputError(file_name(db), "is not a Crucible project (empty file)");
        throw InputError(file_name(db),
                         "is an SQLite database but not a Crucible project (no Crucible "
                         "application id)");
    }
    bool has_meta =
        db.query_int("SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='meta'")
            .value_or(0) > 0;
    std::optional<std::string> format;
    if (has_meta) format = db.query_text("SELECT value FROM meta WHERE key='format'");
    if (!format || *format != kProjectFormat)
        throw InputError(file_name(db), "is not a Crucible project (meta table has no format '" +
                                            std::string(kProjectFormat) + "')");
    if (version > kSchemaVersion)
        throw InputError(file_name(db),
                         "was written by a newer Crucible (project schema version " +
                             std::to_string(version) +
                             "; this Crucible " CRUCIBLE_VERSION " reads up to version " +
                             std::to_string(kSchemaVersion) + "). Upgrade Crucible to open it.");
    if (version < 1)
        throw InputError(file_name(db), "is a damaged Crucible project (schema version " +
                                            std::to_string(version) + ")");
    return static_cast<int>(version);
}

void migrate_schema(Database& db) {
    for (;;) {
        Transaction tx(db);
        int version = static_cast<int>(db.query_int("PRAGMA user_version").value_or(0));
        if (version >= kSchemaVersion) return;  // rolled back: nothing was changed
        const Migration* step = nullptr;
        for (const auto& m : migrations())
            if (m.from == version) step = &m;
        if (!step)
            throw Error(file_name(db) + ": no migration from project schema version " +
                        std::to_string(version));
        db.exec(step->ddl);
        if (step->convert) step->convert(db);
        db.exec("PRAGMA user_version = " + std::to_string(version + 1));
        tx.commit();
    }
}

}  // namespace crucible::store
