// POSIX-only test: forks a process that holds the project while the test opens it.
// Dataset import/export: hashing, version hash, progress and cancellation, hostile names, and a
// process killed (SIGKILL, at a named point) in the middle of an import.
#include <gtest/gtest.h>

#ifndef _WIN32
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cstring>

#include <opencv2/imgcodecs.hpp>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace crucible::store {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::int64_t count(Project& p, const char* table) {
    return p.db().query_int(std::string("SELECT count(*) FROM ") + table).value_or(-1);
}

TEST(Import, StoresImagesBoxesClassesAndHashes) {
    TempDir dir;
    auto ds = test::make_dataset(dir / "data", 20);
    auto p = Project::create(dir / "p.crucible");
    auto r = import_dataset(*p, ds, {.name = "d", .format = "yolo"});
    EXPECT_EQ(r.images, 20u);
    std::size_t boxes = 0;
    for (const auto& img : ds.images)
        boxes += img.boxes.size();
    EXPECT_EQ(r.boxes, boxes);
    EXPECT_EQ(r.bytes, 20u * 512u);
    auto info = get_dataset(*p, r.dataset_id);
    EXPECT_EQ(info.images, 20);
    EXPECT_EQ(info.boxes, static_cast<std::int64_t>(boxes));
    EXPECT_EQ(info.classes, 3);
    EXPECT_EQ(info.format, "yolo");
    EXPECT_EQ(info.source, "data");
    EXPECT_EQ(info.version_hash, r.version_hash);
    auto s = p->db().prepare("SELECT sha256, size FROM images WHERE path = ?");
    s.bind(1, "data/images/train/img_3.jpg");
    ASSERT_TRUE(s.step());
    EXPECT_EQ(s.column_text(0), sha256_file(dir / "data/images/train/img_3.jpg"));
    EXPECT_EQ(s.column_int64(1), 512);
}

TEST(Import, ExportRoundTripsTheDataset) {
    TempDir dir;
    auto ds = test::make_dataset(dir / "data", 12);
    auto p = Project::create(dir / "p.crucible");
    auto r = import_dataset(*p, ds, {.name = "d"});
    auto out = export_dataset(*p, r.dataset_id);
    EXPECT_EQ(out.class_names, ds.class_names);
    ASSERT_EQ(out.images.size(), ds.images.size());
    for (std::size_t i = 0; i < ds.images.size(); ++i) {
        EXPECT_TRUE(fs::equivalent(out.images[i].path, ds.root / ds.images[i].path));
        EXPECT_EQ(out.images[i].boxes, ds.images[i].boxes);
        EXPECT_EQ(out.images[i].split, ds.images[i].split);
        EXPECT_EQ(out.images[i].tags, ds.images[i].tags);
        EXPECT_EQ(out.images[i].width, 640);
        EXPECT_EQ(out.images[i].sha256, sha256_file(out.images[i].path));
    }
}

// A taken name gets the first free "-N" suffix, as the studio offers it on an import clash.
TEST(Import, FreeDatasetNameForAClash) {
    TempDir dir;
    auto ds = test::make_dataset(dir / "data", 2);
    auto p = Project::create(dir / "p.crucible");
    EXPECT_EQ(free_dataset_name(*p, "cars"), "cars");
    import_dataset(*p, ds, {.name = "cars"});
    EXPECT_EQ(free_dataset_name(*p, "cars"), "cars-2");
    import_dataset(*p, ds, {.name = "cars-2"});
    EXPECT_EQ(free_dataset_name(*p, "cars"), "cars-3");
    EXPECT_THROW(import_dataset(*p, ds, {.name = "cars"}), InputError);
}

TEST(Import, VersionHashFollowsContentNotLocation) {
    TempDir dir;
    auto ds = test::make_dataset(dir / "data", 8);
    auto p = Project::create(dir / "p.crucible");
    auto a = import_dataset(*p, ds, {.name = "a"});
    // The same content under another folder and other file names: same version.
    auto copy = test::make_dataset(dir / "copy", 8, 512, "other_");
    auto b = import_dataset(*p, copy, {.name = "b"});
    EXPECT_EQ(a.version_hash, b.version_hash);
    // One box moved: another version.
    copy.images[2].boxes[0].cx += 0.01;
    auto c = import_dataset(*p, copy, {.name = "c"});
    EXPECT_NE(a.version_hash, c.version_hash);
    EXPECT_EQ(a.version_hash.size(), 64u);
}

TEST(Import, ReportsProgressAndCanBeCanceled) {
    TempDir dir;
    auto ds = test::make_dataset(dir / "data", 600, 64);
    auto p = Project::create(dir / "p.crucible");
    std::vector<ImportProgress> seen;
    ImportOptions o{.name = "d"};
    o.progress = [&](const ImportProgress& pr) { seen.push_back(pr); };
    import_dataset(*p, ds, o);
    ASSERT_FALSE(seen.empty());
    EXPECT_STREQ(seen.front().phase, "hash");
    EXPECT_STREQ(seen.back().phase, "store");
    EXPECT_EQ(seen.back().done, 600u);
    EXPECT_EQ(seen.back().total, 600u);
    for (std::size_t i = 1; i < seen.size(); ++i)
        if (std::strcmp(seen[i].phase, seen[i - 1].phase) == 0) {
            EXPECT_GT(seen[i].done, seen[i - 1].done);
        }

    // Cancel in each phase: nothing is kept.
    for (const char* phase : {"hash", "store"}) {
        std::atomic<bool> cancel{false};
        ImportOptions c{.name = std::string("canceled-") + phase};
        c.cancel = &cancel;
        c.progress = [&](const ImportProgress& pr) {
            if (std::strcmp(pr.phase, phase) == 0 && pr.done >= 256) cancel = true;
        };
        EXPECT_THROW(import_dataset(*p, ds, c), ImportCanceled) << phase;
        EXPECT_FALSE(find_dataset(*p, c.name).has_value());
    }
    EXPECT_EQ(count(*p, "datasets"), 1);
    EXPECT_EQ(count(*p, "images"), 600);
}

TEST(Import, RejectsBadInputWithClearMessages) {
    TempDir dir;
    auto ds = test::make_dataset(dir / "data", 4);
    auto p = Project::create(dir / "p.crucible");
    import_dataset(*p, ds, {.name = "d"});
    EXPECT_THROW(import_dataset(*p, ds, {.name = "d"}), InputError);  // name taken
    EXPECT_THROW(import_dataset(*p, ds, {.name = ""}), InputError);

    auto bad = ds;
    bad.images[1].boxes[0].cls = 7;
    try {
        import_dataset(*p, bad, {.name = "bad"});
        FAIL() << "class 7 of 3 accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("img_1.jpg"), std::string::npos) << e.what();
    }
    auto missing = ds;
    missing.images[2].path = "images/train/nope.jpg";
    EXPECT_THROW(import_dataset(*p, missing, {.name = "missing"}), InputError);
    auto twice = ds;
    twice.images.push_back(twice.images[0]);
    EXPECT_THROW(import_dataset(*p, twice, {.name = "twice"}), InputError);
    auto wrong_hash = ds;
    wrong_hash.images[0].sha256 = std::string(64, '0');
    EXPECT_THROW(import_dataset(*p, wrong_hash, {.name = "hash"}), InputError);
    EXPECT_EQ(count(*p, "datasets"), 1);
    EXPECT_EQ(count(*p, "images"), 4);
}

TEST(Import, SqlAndQuoteSoupIsStoredVerbatim) {
    TempDir dir;
    data::DetectionDataset ds;
    ds.root = dir / "data";
    ds.class_names = {"'); DROP TABLE images;--",
                      "\"",
                      "\\",
                      "Robert'); DROP TABLE classes;--",
                      "猫 ' \" \\ %_",
                      ""};
    std::vector<std::string> names = {"'); DROP TABLE images;--.jpg", "a'b.jpg", "中文 图片.jpg",
                                      "100%_x.jpg"};
#ifndef _WIN32
    names.push_back("q\"uote.jpg");
    names.push_back("back\\slash.jpg");
#endif
    for (std::size_t i = 0; i < names.size(); ++i) {
        data::ImageRecord img;
        img.path = path_from_utf8(names[i]);
        img.split = "train";
        img.tags["note"] = "'; DELETE FROM boxes; --";
        img.boxes.push_back({static_cast<int>(i % ds.class_names.size()), 0.5, 0.5, 0.2, 0.2});
        test::write_random_file(ds.root / img.path, 100, i);
        ds.images.push_back(img);
    }
    auto p = Project::create(dir / "p.crucible");
    auto r = import_dataset(*p, ds, {.name = "x'); DROP TABLE datasets;--"});
    EXPECT_EQ(count(*p, "images"), static_cast<std::int64_t>(names.size()));
    EXPECT_EQ(count(*p, "classes"), static_cast<std::int64_t>(ds.class_names.size()));
    EXPECT_EQ(count(*p, "boxes"), static_cast<std::int64_t>(names.size()));
    ASSERT_TRUE(find_dataset(*p, "x'); DROP TABLE datasets;--").has_value());
    auto out = export_dataset(*p, r.dataset_id);
    EXPECT_EQ(out.class_names, ds.class_names);
    for (std::size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(path_to_utf8(out.images[i].path.filename()), names[i]);
        EXPECT_TRUE(fs::exists(out.images[i].path));
        EXPECT_EQ(out.images[i].tags.at("note"), "'; DELETE FROM boxes; --");
    }
    EXPECT_EQ(p->db().query_text("PRAGMA integrity_check"), "ok");
}

#ifndef _WIN32
// Runs an import in a child process that kills itself with SIGKILL when the progress callback
// reports `phase` at `at_image` (fault injection at a named point, no timing). Returns the
// child's exit status.
int import_and_die(const fs::path& project, const data::DetectionDataset& ds, const char* phase,
                   std::size_t at_image) {
    pid_t child = ::fork();
    if (child == 0) {
        try {
            auto p = Project::open(project);
            ImportOptions o{.name = "big"};
            o.progress = [&](const ImportProgress& pr) {
                if (std::strcmp(pr.phase, phase) == 0 && pr.done >= at_image) ::raise(SIGKILL);
            };
            import_dataset(*p, ds, o);
        } catch (...) {
        }
        ::_exit(3);  // not reached when the fault fired
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return status;
}

TEST(Import, KilledImportLeavesAConsistentProject) {
    TempDir dir;
    const fs::path file = dir / "p.crucible";
    auto small = test::make_dataset(dir / "small", 5, 64);
    auto big = test::make_dataset(dir / "big", 1200, 64);
    {
        auto p = Project::create(file);
        import_dataset(*p, small, {.name = "small"});
    }
    for (auto [phase, at] :
         {std::pair{"hash", std::size_t{300}}, std::pair{"store", std::size_t{768}}}) {
        int status = import_and_die(file, big, phase, at);
        ASSERT_TRUE(WIFSIGNALED(status)) << phase << " status " << status;
        ASSERT_EQ(WTERMSIG(status), SIGKILL);
        auto p = Project::open(file);
        EXPECT_FALSE(p->stale_lock_taken_over().empty()) << phase;
        EXPECT_EQ(p->db().query_text("PRAGMA integrity_check"), "ok") << phase;
        EXPECT_FALSE(p->db().query_text("PRAGMA foreign_key_check").has_value()) << phase;
        // The killed import is not there at all; the earlier dataset is intact.
        EXPECT_FALSE(find_dataset(*p, "big").has_value()) << phase;
        EXPECT_EQ(count(*p, "datasets"), 1) << phase;
        EXPECT_EQ(count(*p, "images"), 5) << phase;
        std::size_t small_boxes = 0;
        for (const auto& img : small.images)
            small_boxes += img.boxes.size();
        EXPECT_EQ(count(*p, "boxes"), static_cast<std::int64_t>(small_boxes)) << phase;
    }
    // The same import then completes in full.
    auto p = Project::open(file);
    auto r = import_dataset(*p, big, {.name = "big"});
    EXPECT_EQ(get_dataset(*p, r.dataset_id).images, 1200);
}
#endif

TEST(ChatRecords, StoredAsJsonPerRecord) {
    TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    std::vector<Json> records = {
        Json{{"instruction", "say '); DROP TABLE chat_records;--"}, {"output", "中文"}},
        Json{{"conversations", Json::array({Json{{"from", "human"}, {"value", "hi"}}})}}};
    auto id = create_chat_dataset(*p, "alpaca", records);
    EXPECT_EQ(read_chat_records(*p, id), records);
    auto info = get_dataset(*p, id);
    EXPECT_EQ(info.kind, "chat");
    EXPECT_EQ(info.chat_records, 2);
    EXPECT_EQ(info.version_hash.size(), 64u);
    delete_dataset(*p, id);
    EXPECT_EQ(count(*p, "chat_records"), 0);  // cascade
}

}  // namespace
}  // namespace crucible::store

namespace crucible::store {
namespace {

// Through core/data's readers and writers: a YOLO folder in, COCO and VOC out and back.
TEST(ImportFormats, YoloFolderInCocoAndVocOut) {
    test::TempDir dir;
    auto ds = test::make_dataset(dir / "src", 10, 128);
    ds.images[1].boxes[0].difficult = true;
    // COCO and VOC need pixel sizes: real (tiny) JPEGs this time.
    for (std::size_t i = 0; i < ds.images.size(); ++i) {
        cv::Mat m(48, 64, CV_8UC3, cv::Scalar(static_cast<double>(i * 20), 100, 200));
        ASSERT_TRUE(cv::imwrite(path_to_utf8(ds.root / ds.images[i].path), m));
        ds.images[i].width = 64;
        ds.images[i].height = 48;
    }
    fs::path yaml = data::save_detection_dataset(ds, dir / "yolo", data::DatasetFormat::Yolo);
    auto p = Project::create(dir / "p.crucible");
    std::vector<std::string> problems;
    data::LoadOptions sizes;
    sizes.read_image_sizes = true;
    auto r = import_dataset_from(*p, dir / "yolo", "auto", {.name = "y"}, &problems, sizes);
    EXPECT_EQ(export_dataset(*p, r.dataset_id).images[0].width, 64);
    EXPECT_EQ(r.images, 10u);
    auto info = get_dataset(*p, r.dataset_id);
    EXPECT_EQ(info.format, "yolo");
    EXPECT_EQ(info.classes, 3);
    std::size_t boxes = 0;
    for (const auto& img : ds.images)
        boxes += img.boxes.size();
    EXPECT_EQ(r.boxes, boxes);
    (void)yaml;

    for (const char* format : {"coco", "voc"}) {
        fs::path out = dir / (std::string("out-") + format);
        export_dataset_to(*p, r.dataset_id, out, format);
        auto back = data::load_detection_dataset(out, data::parse_dataset_format(format));
        EXPECT_EQ(back.dataset.images.size(), 10u) << format;
        std::size_t back_boxes = 0;
        for (const auto& img : back.dataset.images)
            back_boxes += img.boxes.size();
        EXPECT_EQ(back_boxes, boxes) << format;
        auto again = import_dataset_from(*p, out, format, {.name = std::string("back-") + format});
        EXPECT_EQ(again.boxes, boxes) << format;
    }
    EXPECT_THROW(export_dataset_to(*p, r.dataset_id, dir / "x", "auto"), InputError);
    EXPECT_THROW(import_dataset_from(*p, dir / "nothing-here", "auto", {.name = "n"}), InputError);
}

TEST(ImportFormats, DifficultFlagIsKept) {
    test::TempDir dir;
    auto ds = test::make_dataset(dir / "src", 3, 64);
    ds.images[2].boxes[0].difficult = true;
    auto p = Project::create(dir / "p.crucible");
    auto a = import_dataset(*p, ds, {.name = "a"});
    auto out = export_dataset(*p, a.dataset_id);
    EXPECT_TRUE(out.images[2].boxes[0].difficult);
    EXPECT_FALSE(out.images[1].boxes[0].difficult);
    ds.images[2].boxes[0].difficult = false;
    auto b = import_dataset(*p, ds, {.name = "b"});
    EXPECT_NE(a.version_hash, b.version_hash);
}

}  // namespace
}  // namespace crucible::store

namespace crucible::store {
namespace {

// A chat dataset's snapshot is its records as JSONL (what an LLM run reads), written once per
// version; the lines are the ones its version hash covers.
TEST(Snapshot, ChatDatasetBecomesJsonl) {
    test::TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const std::vector<Json> records = {
        {{"instruction", "说你好"}, {"output", "你好"}},
        {{"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}}};
    const auto id = create_chat_dataset(*p, "chat", records);
    const auto file = snapshot_dataset(*p, id);
    EXPECT_EQ(file.filename(), "data.jsonl");
    const std::string text = read_file_bytes(file);
    EXPECT_EQ(text, records[0].dump() + "\n" + records[1].dump() + "\n");
    EXPECT_EQ(sha256_hex(text), get_dataset(*p, id).version_hash);
    EXPECT_EQ(snapshot_dataset(*p, id), file);  // one version, written once
}

}  // namespace
}  // namespace crucible::store

namespace crucible::store {
namespace {

// Deleting a dataset removes its snapshots, but for one a run trained on (its options name it).
TEST(Snapshot, DeletedDatasetTakesItsUnusedSnapshots) {
    test::TempDir dir;
    auto p = Project::create(dir / "p.crucible");
    const auto id = create_chat_dataset(*p, "chat", {Json{{"text", "a"}}});
    const auto other = create_chat_dataset(*p, "other", {Json{{"text", "b"}}});
    const auto used = snapshot_dataset(*p, id);
    const auto kept_other = snapshot_dataset(*p, other);
    RunSetup setup{.name = "r", .task = "llm.lora"};
    setup.options = {{"data", path_to_utf8(used)}};
    create_run(*p, setup);
    // A second version of the dataset that no run names.
    p->db().exec("UPDATE datasets SET version_hash = 'ffffffffffffffff' WHERE name = 'chat'");
    const auto unused = snapshot_dataset(*p, id);
    ASSERT_NE(unused, used);
    delete_dataset(*p, id);
    EXPECT_TRUE(std::filesystem::exists(used));
    EXPECT_FALSE(std::filesystem::exists(unused.parent_path()));
    EXPECT_TRUE(std::filesystem::exists(kept_other));  // another dataset's
}

}  // namespace
}  // namespace crucible::store
