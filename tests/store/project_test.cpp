// POSIX-only test: forks a process that holds the project lock.
// Journal modes, the single-writer lock (also across processes and after a killed holder),
// save-as with path rebasing, moved project folders and Chinese names.
#include <gtest/gtest.h>

#ifndef _WIN32
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/dataset_store.h"
#include "core/store/platform.h"
#include "core/store/project.h"
#include "tests/store/store_test_util.h"

namespace crucible::store {
namespace {

namespace fs = std::filesystem;
using test::message_of;
using test::TempDir;

TEST(ProjectJournal, LocalFolderIsNotANetworkFilesystem) {
    TempDir dir;
    EXPECT_FALSE(platform::is_network_filesystem(dir.path()));
    EXPECT_FALSE(platform::is_network_filesystem(dir / "not-yet.crucible"));
}

TEST(ProjectJournal, AutoUsesWalOnLocalDisk) {
    TempDir dir;
    auto p = Project::create(dir / "a.crucible");
    EXPECT_EQ(p->journal_mode(), "wal");
}

TEST(ProjectJournal, RollbackModeWorksAndLeavesNoWal) {
    TempDir dir;
    OpenOptions o;
    o.journal = JournalMode::Rollback;
    {
        auto p = Project::create(dir / "a.crucible", o);
        EXPECT_EQ(p->journal_mode(), "delete");
        create_chat_dataset(*p, "chat", {Json{{"q", "hi"}}, Json{{"q", "ho"}}});
        EXPECT_FALSE(fs::exists(dir / "a.crucible-wal"));
    }
    // Reopen in rollback mode; a file written in WAL mode switches too.
    auto p = Project::open(dir / "a.crucible", o);
    EXPECT_EQ(p->journal_mode(), "delete");
    EXPECT_EQ(read_chat_records(*p, list_datasets(*p).at(0).id).size(), 2u);
    o.journal = JournalMode::Wal;
    p.reset();
    p = Project::open(dir / "a.crucible", o);
    EXPECT_EQ(p->journal_mode(), "wal");
    p.reset();
    o.journal = JournalMode::Rollback;
    p = Project::open(dir / "a.crucible", o);
    EXPECT_EQ(p->journal_mode(), "delete");
    EXPECT_EQ(p->db().query_text("PRAGMA integrity_check"), "ok");
}

TEST(ProjectJournal, ParsesTheSetting) {
    EXPECT_EQ(parse_journal_mode("wal"), JournalMode::Wal);
    EXPECT_EQ(parse_journal_mode("rollback"), JournalMode::Rollback);
    EXPECT_EQ(parse_journal_mode("auto"), JournalMode::Auto);
    EXPECT_THROW(parse_journal_mode("memory"), InputError);
}

TEST(ProjectLock, SecondWriterIsToldWhoHoldsIt) {
    TempDir dir;
    auto first = Project::create(dir / "a.crucible");
    std::string msg = message_of([&] { Project::open(dir / "a.crucible"); });
    EXPECT_NE(msg.find("opened by another Crucible"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pid " + std::to_string(crucible::platform::process_id())),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(crucible::platform::host_name()), std::string::npos) << msg;
    // Readers are welcome and see the writer's committed data.
    create_chat_dataset(*first, "c", {Json{{"a", 1}}});
    OpenOptions ro;
    ro.read_only = true;
    auto reader = Project::open(dir / "a.crucible", ro);
    EXPECT_EQ(list_datasets(*reader).size(), 1u);
    EXPECT_THROW(create_chat_dataset(*reader, "d", {}), Error);
    // After the writer closes, a new writer gets in and finds no stale lock.
    first.reset();
    auto second = Project::open(dir / "a.crucible");
    EXPECT_TRUE(second->stale_lock_taken_over().empty());
}

#ifndef _WIN32
TEST(ProjectLock, WriterInAnotherProcessBlocksAndAKilledOneIsTakenOver) {
    TempDir dir;
    const fs::path file = dir / "a.crucible";
    { Project::create(file); }
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto p = Project::open(file);
        char c = 'x';
        [[maybe_unused]] auto n = ::write(ready[1], &c, 1);
        ::pause();  // held until killed
        ::_exit(0);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    std::string msg = message_of([&] { Project::open(file); });
    EXPECT_NE(msg.find("opened by another Crucible (pid " + std::to_string(child)),
              std::string::npos)
        << msg;
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    ::close(ready[0]);
    ::close(ready[1]);
    // The dead writer's lock record is still in the file; the OS lock is gone: taken over.
    auto p = Project::open(file);
    EXPECT_NE(p->stale_lock_taken_over().find("pid " + std::to_string(child)), std::string::npos)
        << p->stale_lock_taken_over();
    EXPECT_EQ(p->db().query_text("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(p->db().query_int("SELECT pid FROM session_lock"), ::getpid());
}
#endif

TEST(ProjectPaths, SaveAsRebasesRelativeImagePaths) {
    TempDir dir;
    auto ds = test::make_dataset(dir / "proj/data", 6);
    auto p = Project::create(dir / "proj/a.crucible");
    auto r = import_dataset(*p, ds, {.name = "d"});
    EXPECT_EQ(p->db().query_text("SELECT path FROM images ORDER BY id LIMIT 1"),
              "data/images/train/img_0.jpg");
    fs::create_directories(dir / "elsewhere/deeper");
    p->save_as(dir / "elsewhere/deeper/b.crucible");
    EXPECT_EQ(p->path().filename(), "b.crucible");
    EXPECT_EQ(p->db().query_text("SELECT path FROM images ORDER BY id LIMIT 1"),
              "../../proj/data/images/train/img_0.jpg");
    EXPECT_TRUE(missing_images(*p, r.dataset_id).empty());
    auto exported = export_dataset(*p, r.dataset_id);
    ASSERT_EQ(exported.images.size(), 6u);
    EXPECT_TRUE(fs::equivalent(exported.images[0].path, dir / "proj/data/images/train/img_0.jpg"));
    EXPECT_EQ(get_dataset(*p, r.dataset_id).version_hash, r.version_hash);
    // The original is untouched and still valid; the copy is a project on its own.
    p.reset();
    auto original = Project::open(dir / "proj/a.crucible");
    EXPECT_EQ(original->db().query_text("SELECT path FROM images ORDER BY id LIMIT 1"),
              "data/images/train/img_0.jpg");
    EXPECT_THROW(original->save_as(dir / "elsewhere/deeper/b.crucible"), InputError);
}

TEST(ProjectPaths, MovedFolderStillFindsImagesAndChineseNamesWork) {
    TempDir dir;
    const fs::path proj = dir / "项目";
    auto ds = test::make_dataset(proj / path_from_utf8("数据集"), 5, 256, "图片_");
    std::int64_t id = 0;
    {
        auto p = Project::create(proj / path_from_utf8("训练.crucible"));
        id = import_dataset(*p, ds, {.name = "猫和狗"}).dataset_id;
        EXPECT_EQ(p->db().query_text("SELECT path FROM images ORDER BY id LIMIT 1"),
                  "数据集/images/train/图片_0.jpg");
    }
    fs::rename(proj, dir / "moved 移动");
    auto p = Project::open(dir / "moved 移动" / path_from_utf8("训练.crucible"));
    EXPECT_TRUE(missing_images(*p, id).empty());
    auto info = find_dataset(*p, "猫和狗");
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->images, 5);
    auto exported = export_dataset(*p, id);
    EXPECT_TRUE(fs::exists(exported.images[4].path)) << path_to_utf8(exported.images[4].path);
    // And a missing image is reported, not hidden.
    fs::remove(exported.images[4].path);
    auto missing = missing_images(*p, id);
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_EQ(missing[0], "数据集/images/val/图片_4.jpg");
}

}  // namespace
}  // namespace crucible::store
