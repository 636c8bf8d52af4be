// The SQLite wrapper, the schema identity checks and the forward migrations from version 1.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "core/store/schema.h"
#include "core/store/sqlite_db.h"
#include "tests/store/store_test_util.h"

namespace crucible::store {
namespace {

namespace fs = std::filesystem;
using test::message_of;
using test::TempDir;

TEST(SqliteDb, BindsRoundTripEveryType) {
    TempDir dir;
    Database db(dir / "t.db", OpenFlags::Create);
    db.exec("CREATE TABLE t(i INTEGER, d REAL, s TEXT, b BLOB, n TEXT)");
    std::string blob("a\0b", 3);
    std::optional<std::string> none;
    db.prepare("INSERT INTO t VALUES(?, ?, ?, ?, ?)")
        .bind_all(std::int64_t{1} << 40, 2.5, std::string("it's \"quoted\" 中文"), std::string())
        .bind_blob(4, blob)
        .bind(5, none)
        .run();
    auto s = db.prepare("SELECT i, d, s, length(b), n FROM t");
    ASSERT_TRUE(s.step());
    EXPECT_EQ(s.column_int64(0), std::int64_t{1} << 40);
    EXPECT_DOUBLE_EQ(s.column_double(1), 2.5);
    EXPECT_EQ(s.column_text(2), "it's \"quoted\" 中文");
    EXPECT_EQ(s.column_int(3), 3);
    EXPECT_TRUE(s.is_null(4));
    EXPECT_FALSE(s.step());
}

TEST(SqliteDb, TransactionRollsBackUnlessCommitted) {
    TempDir dir;
    Database db(dir / "t.db", OpenFlags::Create);
    db.exec("CREATE TABLE t(x INTEGER)");
    {
        Transaction tx(db);
        db.prepare("INSERT INTO t VALUES(?)").bind(1, 1).run();
    }
    EXPECT_EQ(db.query_int("SELECT count(*) FROM t"), 0);
    {
        Transaction tx(db);
        db.prepare("INSERT INTO t VALUES(?)").bind(1, 1).run();
        tx.commit();
    }
    EXPECT_EQ(db.query_int("SELECT count(*) FROM t"), 1);
    EXPECT_FALSE(db.in_transaction());
}

TEST(SqliteDb, BadSqlNamesTheFile) {
    TempDir dir;
    Database db(dir / "t.db", OpenFlags::Create);
    std::string msg = message_of([&] { db.exec("SELEKT 1"); });
    EXPECT_NE(msg.find("t.db"), std::string::npos) << msg;
}

TEST(Schema, NewProjectHasCurrentVersionAndIdentity) {
    TempDir dir;
    auto p = Project::create(dir / "a.crucible");
    EXPECT_EQ(p->schema_version(), kSchemaVersion);
    EXPECT_EQ(p->db().query_int("PRAGMA application_id"), kApplicationId);
    EXPECT_EQ(p->db().query_text("SELECT value FROM meta WHERE key='format'"), kProjectFormat);
    EXPECT_EQ(p->db().query_int("PRAGMA foreign_keys"), 1);
    // Version 2 added images.caption and presets.
    EXPECT_EQ(
        p->db().query_int("SELECT count(*) FROM pragma_table_info('images') WHERE name='caption'"),
        1);
    EXPECT_EQ(p->db().query_int("SELECT count(*) FROM sqlite_schema WHERE name='presets'"), 1);
}

TEST(Schema, CreateRefusesAnExistingFile) {
    TempDir dir;
    std::ofstream(dir / "a.crucible") << "x";
    std::string msg = message_of([&] { Project::create(dir / "a.crucible"); });
    EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
}

// Builds a file exactly as Crucible's schema version 1 wrote it, with some data.
void make_v1_file(const fs::path& path) {
    Database db(path, OpenFlags::Create);
    db.exec(schema_v1_ddl());
    db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    db.exec("PRAGMA user_version = 1");
    db.prepare("INSERT INTO meta(key, value) VALUES('format', ?)").bind(1, kProjectFormat).run();
    db.exec(
        "INSERT INTO datasets(id, name, created_at) VALUES(1, 'old', 1.0);"
        "INSERT INTO classes VALUES(1, 0, 'cat');"
        "INSERT INTO images(id, dataset_id, path, size, sha256, split) "
        "VALUES(7, 1, 'imgs/a.jpg', 10, 'abc', 'train');"
        "INSERT INTO boxes(image_id, cls, cx, cy, w, h) VALUES(7, 0, .5, .5, .1, .1);"
        "INSERT INTO servers(id, name, url) VALUES(5, 'gpu1', 'https://gpu1:7443');"
        "INSERT INTO runs(id, name, task, server_id, created_at, updated_at) "
        "VALUES(3, 'r', 'detect.yolo', 5, 1, 1);"
        "INSERT INTO run_events VALUES(3, 0, 1.0, 'status', '{\"seq\":0,\"kind\":\"status\"}');"
        // Metric values, one row per value as versions 1 and 2 stored them.
        "INSERT INTO metric_names VALUES(1, 'train/box_loss'), (2, 'lr/pg0');"
        "INSERT INTO run_values VALUES(3, 2, 1, 5, 0, 10.5, 2.5), (3, 1, 1, 5, 0, 10.5, 0.01),"
        "(3, 1, 2, NULL, 1, 11.5, NULL), (3, 2, 3, 7, 1, 12.5, 2.25);");
}

TEST(Schema, VersionOneFileIsMigratedWithDataKept) {
    TempDir dir;
    const fs::path file = dir / "old.crucible";
    make_v1_file(file);
    auto p = Project::open(file);
    EXPECT_EQ(p->schema_version(), kSchemaVersion);
    Database& db = p->db();
    EXPECT_EQ(db.query_text("SELECT path FROM images WHERE id = 7"), "imgs/a.jpg");
    EXPECT_EQ(db.query_int("SELECT count(*) FROM boxes"), 1);
    EXPECT_EQ(db.query_int("SELECT difficult FROM boxes"), 0);  // column added by version 2
    EXPECT_EQ(db.query_int("SELECT count(*) FROM run_events WHERE run_id = 3"), 1);
    // Version 4: the run names its server (the registry's name) instead of a project row.
    EXPECT_EQ(get_run(*p, 3).setup.server, "gpu1");
    // Version 5: the run keeps its event count and last seq (listing runs counts nothing).
    EXPECT_EQ(get_run(*p, 3).events, 1);
    EXPECT_EQ(get_run(*p, 3).last_seq, 0);
    // Version 7: runs from before train on their one server.
    EXPECT_TRUE(get_run(*p, 3).setup.peers.empty());
    // Version 3 packs an event's values into one row; the series read back are the same.
    EXPECT_EQ(db.query_int("SELECT count(*) FROM run_points WHERE run_id = 3"), 3);
    EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_schema WHERE name = 'run_values'"), 0);
    auto series = read_series(*p, 3);
    ASSERT_EQ(series.size(), 2u);
    const Series& lr = series.at("lr/pg0");
    EXPECT_EQ(lr.step, (std::vector<std::int64_t>{5, 7}));
    EXPECT_EQ(lr.epoch, (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(lr.t, (std::vector<double>{10.5, 12.5}));
    EXPECT_EQ(lr.value, (std::vector<double>{2.5, 2.25}));
    const Series& box = series.at("train/box_loss");
    EXPECT_EQ(box.step, (std::vector<std::int64_t>{5, -1}));
    EXPECT_EQ(box.epoch, (std::vector<std::int64_t>{0, 1}));
    ASSERT_EQ(box.size(), 2u);
    EXPECT_EQ(box.value[0], 0.01);
    EXPECT_TRUE(std::isnan(box.value[1]));
    db.prepare("UPDATE images SET caption = ? WHERE id = 7").bind(1, "a cat").run();
    EXPECT_EQ(db.query_text("SELECT caption FROM images WHERE id = 7"), "a cat");
    db.exec("INSERT INTO presets(task, name, updated_at) VALUES('detect.yolo', 'fast', 0)");
    EXPECT_EQ(db.query_text("PRAGMA integrity_check"), "ok");
}

TEST(Schema, OldFileOpenedReadOnlyAsksForAnUpgrade) {
    TempDir dir;
    make_v1_file(dir / "old.crucible");
    OpenOptions ro;
    ro.read_only = true;
    std::string msg = message_of([&] { Project::open(dir / "old.crucible", ro); });
    EXPECT_NE(msg.find("older Crucible"), std::string::npos) << msg;
}

TEST(Schema, RefusesFilesThatAreNotProjects) {
    TempDir dir;
    // Random bytes.
    test::write_random_file(dir / "random.crucible", 8192, 3);
    std::string msg = message_of([&] { Project::open(dir / "random.crucible"); });
    EXPECT_NE(msg.find("not a Crucible project"), std::string::npos) << msg;
    EXPECT_NE(msg.find("random.crucible"), std::string::npos) << msg;
    // An unrelated SQLite database; it is left exactly as it was.
    {
        Database other(dir / "other.db", OpenFlags::Create);
        other.exec("CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('hi');");
    }
    std::string before = read_file_bytes(dir / "other.db");
    msg = message_of([&] { Project::open(dir / "other.db"); });
    EXPECT_NE(msg.find("SQLite database but not a Crucible project"), std::string::npos) << msg;
    EXPECT_EQ(read_file_bytes(dir / "other.db"), before);
    // An empty file, a folder, a missing file.
    std::ofstream(dir / "empty.crucible").flush();
    msg = message_of([&] { Project::open(dir / "empty.crucible"); });
    EXPECT_NE(msg.find("not a Crucible project"), std::string::npos) << msg;
    msg = message_of([&] { Project::open(dir.path()); });
    EXPECT_NE(msg.find("is a folder"), std::string::npos) << msg;
    msg = message_of([&] { Project::open(dir / "missing.crucible"); });
    EXPECT_NE(msg.find("no such project file"), std::string::npos) << msg;
    // Crucible's application id but no meta row.
    {
        Database fake(dir / "fake.crucible", OpenFlags::Create);
        fake.exec("CREATE TABLE t(x); PRAGMA application_id = " + std::to_string(kApplicationId));
    }
    msg = message_of([&] { Project::open(dir / "fake.crucible"); });
    EXPECT_NE(msg.find("not a Crucible project"), std::string::npos) << msg;
}

TEST(Schema, RefusesAProjectFromANewerCrucible) {
    TempDir dir;
    { Project::create(dir / "new.crucible"); }
    {
        Database db(dir / "new.crucible", OpenFlags::ReadWrite);
        db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 5));
    }
    std::string msg = message_of([&] { Project::open(dir / "new.crucible"); });
    EXPECT_NE(msg.find("newer Crucible"), std::string::npos) << msg;
    EXPECT_NE(msg.find("version " + std::to_string(kSchemaVersion + 5)), std::string::npos) << msg;
    // Nothing was changed by the refused open.
    Database db(dir / "new.crucible", OpenFlags::ReadOnly);
    EXPECT_EQ(db.query_int("PRAGMA user_version"), kSchemaVersion + 5);
}

}  // namespace
}  // namespace crucible::store
