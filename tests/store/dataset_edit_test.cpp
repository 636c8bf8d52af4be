// Class edits (add, rename, merge, colour), image tags (the verified flag) and their effect on
// the dataset's version: what trains changes the version, colours and tags do not.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/data/dataset_io.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "tests/store/store_test_util.h"

namespace crucible::store {
namespace {

using test::TempDir;

struct ClassFixture : ::testing::Test {
    TempDir dir;
    std::unique_ptr<Project> p = Project::create(dir / "p.crucible");
    std::int64_t dataset = 0;
    void SetUp() override {
        // classes {"person", "car", "dog"}; boxes of every class.
        dataset =
            import_dataset(*p, test::make_dataset(dir / "data", 30), {.name = "d"}).dataset_id;
    }
    std::string version() { return get_dataset(*p, dataset).version_hash; }
    std::int64_t boxes_of(int cls) {
        return class_box_counts(*p, dataset)[static_cast<std::size_t>(cls)];
    }
};

TEST_F(ClassFixture, AddAndRenameChangeTheVersion) {
    const auto v0 = version();
    EXPECT_EQ(add_class(*p, dataset, "bus"), 3);
    EXPECT_EQ(dataset_class_names(*p, dataset),
              (std::vector<std::string>{"person", "car", "dog", "bus"}));
    const auto v1 = version();
    EXPECT_NE(v1, v0);
    rename_class(*p, dataset, 1, "汽车");  // non-ASCII names are names
    EXPECT_EQ(dataset_class_names(*p, dataset)[1], "汽车");
    EXPECT_NE(version(), v1);
    rename_class(*p, dataset, 1, "汽车");  // the same name again is no clash with itself
}

TEST_F(ClassFixture, BadClassEditsAreRefusedWithTheirReason) {
    EXPECT_THROW(add_class(*p, dataset, ""), InputError);
    EXPECT_THROW(add_class(*p, dataset, "car"), InputError);
    EXPECT_THROW(add_class(*p, dataset, std::string(300, 'x')), InputError);
    EXPECT_THROW(rename_class(*p, dataset, 0, "dog"), InputError);
    EXPECT_THROW(rename_class(*p, dataset, 3, "x"), InputError);
    EXPECT_THROW(rename_class(*p, dataset, -1, "x"), InputError);
    EXPECT_THROW(merge_class(*p, dataset, 1, 1), InputError);
    EXPECT_THROW(merge_class(*p, dataset, 0, 7), InputError);
    EXPECT_THROW(add_class(*p, dataset + 5, "x"), InputError);
    EXPECT_THROW(set_class_color(*p, dataset, 0, "red"), InputError);
    EXPECT_THROW(set_class_color(*p, dataset, 0, "#12345g"), InputError);
    const std::string message = test::message_of([&] { add_class(*p, dataset, "car"); });
    EXPECT_NE(message.find("'car' already"), std::string::npos) << message;
}

TEST_F(ClassFixture, MergeMovesBoxesAndRenumbersTheClassesAfter) {
    const auto person = boxes_of(0), car = boxes_of(1), dog = boxes_of(2);
    ASSERT_GT(person * car * dog, 0);
    const auto v0 = version();
    set_class_color(*p, dataset, 2, "#00ff00");
    EXPECT_EQ(version(), v0);                           // a colour is not what trains
    EXPECT_EQ(merge_class(*p, dataset, 0, 1), person);  // person boxes become car
    EXPECT_EQ(dataset_class_names(*p, dataset), (std::vector<std::string>{"car", "dog"}));
    EXPECT_EQ(class_box_counts(*p, dataset), (std::vector<std::int64_t>{person + car, dog}));
    EXPECT_EQ(class_colors(*p, dataset), (std::vector<std::string>{"", "#00ff00"}));  // moved along
    EXPECT_NE(version(), v0);
    // The exported dataset (what a snapshot trains on) has the renumbered classes.
    const auto exported = export_dataset(*p, dataset);
    for (const auto& image : exported.images)
        for (const auto& box : image.boxes)
            EXPECT_LT(box.cls, 2);
}

TEST_F(ClassFixture, VerifiedTagComesAndGoesWithoutChangingTheVersion) {
    const auto image = p->db().query_int("SELECT min(id) FROM images").value();
    const auto v0 = version();
    set_image_tag(*p, image, kVerifiedTag, "yes");
    const auto exported = export_dataset(*p, dataset);
    EXPECT_EQ(exported.images[0].tags.at(kVerifiedTag), "yes");
    EXPECT_EQ(version(), v0);
    set_image_tag(*p, image, kVerifiedTag, "");
    EXPECT_EQ(export_dataset(*p, dataset).images[0].tags.count(kVerifiedTag), 0u);
    EXPECT_THROW(set_image_tag(*p, image + 1000, kVerifiedTag, "yes"), InputError);
    EXPECT_THROW(set_image_tag(*p, image, "", "yes"), InputError);
}

// A snapshot carries the images' tags (tags.json beside its data.yaml, which the YOLO reader
// reads back), and a tag set since the last snapshot makes a new one at the same version.
TEST_F(ClassFixture, SnapshotCarriesTheTagsAndANewTagMakesANewSnapshot) {
    const auto count_tag = [](const std::filesystem::path& yaml, const std::string& key,
                              const std::string& value) {
        const auto loaded = data::load_detection_dataset(yaml);
        for (const auto& problem : loaded.problems)
            EXPECT_EQ(problem.where.find("tags.json"), std::string::npos) << problem.what;
        int n = 0;
        for (const auto& im : loaded.dataset.images)
            n += im.tags.count(key) && im.tags.at(key) == value;
        return n;
    };
    // The fixture tags every 7th image with a station.
    const auto first = snapshot_dataset(*p, dataset);
    ASSERT_TRUE(std::filesystem::exists(first.parent_path() / "tags.json"));
    EXPECT_EQ(count_tag(first, "station", "0") + count_tag(first, "station", "1") +
                  count_tag(first, "station", "2") + count_tag(first, "station", "3"),
              5);
    const auto image = p->db().query_int("SELECT min(id) FROM images").value();
    const auto v0 = version();
    set_image_tag(*p, image, "工位", "3");
    const auto tagged = snapshot_dataset(*p, dataset);
    EXPECT_EQ(version(), v0);
    EXPECT_NE(tagged.parent_path(), first.parent_path());
    EXPECT_EQ(snapshot_dataset(*p, dataset), tagged) << "written once, then reused";
    EXPECT_EQ(count_tag(tagged, "工位", "3"), 1);
    EXPECT_EQ(count_tag(first, "工位", "3"), 0) << "the earlier snapshot is left as it was";
    set_image_tag(*p, image, "工位", "");
    EXPECT_EQ(snapshot_dataset(*p, dataset), first) << "the same tags: the same snapshot";
}

}  // namespace
}  // namespace crucible::store
