// The dataset view's filters on a small generated project: class, split, tag (tags kept in the
// project, read with the rest of the content) and validation problem (image files checked in the
// background with core/data's checks; boxes checked as they are), alone and combined, through
// the API and through the filter lists.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QTest>
#include <fstream>
#include <set>

#include "core/base/file_io.h"
#include "core/data/dataset_io.h"
#include "core/data/synth/synth.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "tests/ui/qt_test_env.h"
#include "ui/annotation_store.h"
#include "ui/class_colors.h"
#include "ui/dataset_view.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

struct TaggedProject {
    std::filesystem::path dir = uitest::temp_dir();
    std::unique_ptr<store::Project> project;
    std::int64_t dataset = 0;
    std::shared_ptr<DatasetContent> content;

    TaggedProject() {
        data::SynthOptions o;
        o.train = 6;
        o.val = 3;
        o.classes = 3;
        o.imgsz = 96;
        o.seed = 11;
        const auto yaml = data::write_synth_dataset(dir / "synth", o);
        data::DetectionDataset ds = data::load_detection_dataset(yaml).dataset;
        // emplace: GCC 12's -O3 -Wrestrict misfires on assigning a literal to a std::string.
        for (std::size_t i = 0; i < ds.images.size(); ++i) {
            ds.images[i].tags.emplace("station", i % 3 == 0 ? "a" : "b");
            if (i == 1) ds.images[i].tags.emplace("light", "night");
        }
        project = store::Project::create(dir / "p.crucible");
        store::ImportOptions io;
        io.name = "tagged";
        dataset = store::import_dataset(*project, ds, io).dataset_id;
        content = std::make_shared<DatasetContent>(load_dataset_content(*project, dataset));
    }
};

std::size_t count_if_images(const DatasetContent& c, const std::function<bool(int)>& keep) {
    std::size_t n = 0;
    for (int i = 0; i < static_cast<int>(c.images.size()); ++i)
        n += keep(i) ? 1 : 0;
    return n;
}

bool has_class(const DatasetImage& img, int cls) {
    return std::any_of(img.boxes.begin(), img.boxes.end(),
                       [&](const data::Box& b) { return b.cls == cls; });
}

}  // namespace

// Thumbnails show their boxes, each in its class's colour (the annotation editor's).
TEST(DatasetView, ThumbnailsDrawTheBoxesInTheirClassColours) {
    QImage grey(100, 80, QImage::Format_RGB32);
    grey.fill(QColor(128, 128, 128));
    const QImage drawn =
        thumbnail_with_boxes(grey, {{2, 0.5, 0.5, 0.5, 0.5}}).toImage();  // x 25..75, y 20..60
    EXPECT_EQ(drawn.pixelColor(25, 40), class_color(2));                  // the left edge
    EXPECT_EQ(drawn.pixelColor(50, 20), class_color(2));                  // the top edge
    EXPECT_EQ(drawn.pixelColor(50, 40), QColor(128, 128, 128));           // inside: untouched
    EXPECT_EQ(thumbnail_with_boxes(grey, {}).toImage().pixelColor(25, 40), QColor(128, 128, 128));
}

TEST(DatasetFilters, ClassSplitTagAndProblemShowTheRightThumbnails) {
    TaggedProject fx;
    DatasetContent& c = *fx.content;
    ASSERT_EQ(c.images.size(), 9u);
    // Problems: a truncated image, a missing one, a box edited out of the image, an image whose
    // boxes were all deleted.
    const int truncated = 2, missing = 7, bad_box = 4, emptied = 5;
    {
        const std::string bytes = read_file_bytes(c.images[truncated].path);
        std::ofstream(c.images[truncated].path, std::ios::binary | std::ios::trunc)
            << bytes.substr(0, bytes.size() / 2);
    }
    std::filesystem::remove(c.images[missing].path);
    c.images[bad_box].boxes.push_back({0, 0.5, 0.5, -0.2, 0.1});
    c.images[emptied].boxes.clear();

    DatasetView view(fx.content, "tagged");
    view.resize(1000, 600);
    view.show();
    auto* tag_list = view.findChild<QComboBox*>("tag_filter");
    auto* problem_list = view.findChild<QComboBox*>("problem_filter");
    ASSERT_TRUE(tag_list && problem_list);
    // The tags come with the content (one export of the dataset), so the tag list shows at once.
    ASSERT_EQ(c.images[1].tags.count("light"), 1u);
    EXPECT_EQ(c.images[1].tags.at("light"), "night");
    EXPECT_EQ(c.images[0].tags.at("station"), "a");
    EXPECT_EQ(c.images[1].tags.at("station"), "b");
    EXPECT_EQ(c.images[0].tags.count("light"), 0u);
    EXPECT_TRUE(tag_list->isVisible());
    EXPECT_EQ(tag_list->count(), 1 + 3);  // any, light=night, station=a, station=b
    ASSERT_TRUE(uitest::wait_for([&] { return view.files_checked(); }, 10000));
    EXPECT_EQ(view.model()->rowCount(), 9);

    auto shown = [&](const DatasetFilter& f) {
        view.set_filter(f);
        return static_cast<std::size_t>(view.model()->rowCount());
    };
    // Class.
    for (int cls = 0; cls < 3; ++cls) {
        DatasetFilter f;
        f.cls = cls;
        EXPECT_EQ(shown(f), count_if_images(c, [&](int i) { return has_class(c.images[i], cls); }))
            << cls;
    }
    // Split.
    DatasetFilter val;
    val.split = "val";
    EXPECT_EQ(shown(val), 3u);
    // Tag.
    DatasetFilter station_a;
    station_a.tag = "station=a";
    EXPECT_EQ(shown(station_a), 3u);  // images 0, 3, 6
    DatasetFilter night;
    night.tag = "light=night";
    EXPECT_EQ(shown(night), 1u);
    ASSERT_EQ(view.model()->rowCount(), 1);
    EXPECT_EQ(view.model()->image_index(0), 1);
    // Problems.
    DatasetFilter p;
    p.problem = ProblemFilter::UnreadableImage;
    EXPECT_EQ(shown(p), 2u);
    std::set<int> unreadable{view.model()->image_index(0), view.model()->image_index(1)};
    EXPECT_EQ(unreadable, (std::set<int>{truncated, missing}));
    p.problem = ProblemFilter::BadBox;
    EXPECT_EQ(shown(p), 1u);
    EXPECT_EQ(view.model()->image_index(0), bad_box);
    EXPECT_TRUE(view.model()->problems(bad_box).text().contains("box")) << "bad box text";
    p.problem = ProblemFilter::AnyProblem;
    EXPECT_EQ(shown(p), 3u);
    p.problem = ProblemFilter::NoBoxes;
    const std::size_t empty = count_if_images(c, [&](int i) { return c.images[i].boxes.empty(); });
    ASSERT_GE(empty, 1u);
    EXPECT_EQ(shown(p), empty);
    // Combined: a split, a class and a problem at once.
    DatasetFilter combined;
    combined.split = "val";
    combined.problem = ProblemFilter::UnreadableImage;
    EXPECT_EQ(shown(combined), count_if_images(c, [&](int i) {
                  return c.images[i].split == "val" && (i == truncated || i == missing);
              }));
    combined = {};
    combined.tag = "station=b";
    combined.cls = 0;
    EXPECT_EQ(shown(combined),
              count_if_images(c, [&](int i) { return i % 3 != 0 && has_class(c.images[i], 0); }));

    // The lists do the same as the API; the count label follows.
    view.set_filter(DatasetFilter{});
    tag_list->setCurrentIndex(tag_list->findData(QStringLiteral("station=a")));
    EXPECT_EQ(view.model()->rowCount(), 3);
    EXPECT_EQ(view.count_text(), "3 of 9 images");
    tag_list->setCurrentIndex(0);
    problem_list->setCurrentIndex(
        problem_list->findData(static_cast<int>(ProblemFilter::UnreadableImage)));
    EXPECT_EQ(view.model()->rowCount(), 2);
    EXPECT_TRUE(problem_list->currentText().startsWith("unreadable image (2"))
        << problem_list->currentText().toStdString();
    // The tooltip of a thumbnail says what is wrong.
    const QString tip = view.model()->data(view.model()->index(0), Qt::ToolTipRole).toString();
    EXPECT_FALSE(view.model()->problems(view.model()->image_index(0)).file.isEmpty());
    EXPECT_TRUE(tip.contains(view.model()->problems(view.model()->image_index(0)).file))
        << tip.toStdString();

    // Boxes fixed in the editor: the problem lists follow the content.
    c.images[bad_box].boxes.pop_back();
    view.content_changed();
    view.set_filter(DatasetFilter{-1, {}, {}, ProblemFilter::BadBox});
    EXPECT_EQ(view.model()->rowCount(), 0);
}

// The instances-per-class histogram counts the images the filters let through, and the class
// filter follows renamed and merged classes.
TEST(DatasetFilters, HistogramFollowsTheFiltersAndTheClassList) {
    TaggedProject fx;
    const DatasetContent& c = *fx.content;
    DatasetView view(fx.content, "tagged");
    view.show();
    auto counts_in = [&](const std::function<bool(const DatasetImage&)>& keep) {
        std::vector<double> n(c.class_names.size(), 0);
        for (const auto& img : c.images)
            if (keep(img))
                for (const auto& b : img.boxes)
                    n[static_cast<std::size_t>(b.cls)] += 1;
        return n;
    };
    EXPECT_EQ(view.shown_class_counts(), counts_in([](const DatasetImage&) { return true; }));
    DatasetFilter val;
    val.split = "val";
    view.set_filter(val);
    const auto in_val = counts_in([](const DatasetImage& img) { return img.split == "val"; });
    EXPECT_EQ(view.shown_class_counts(), in_val);
    EXPECT_NE(in_val, counts_in([](const DatasetImage&) { return true; }));
    DatasetFilter station;
    station.tag = "station=a";
    view.set_filter(station);
    EXPECT_EQ(view.shown_class_counts(), counts_in([](const DatasetImage& img) {
                  auto it = img.tags.find("station");
                  return it != img.tags.end() && it->second == "a";
              }));

    // Classes renamed and merged elsewhere (the class editor): the class filter lists them.
    store::rename_class(*fx.project, fx.dataset, 0, "disc");
    store::merge_class(*fx.project, fx.dataset, 2, 1);
    *fx.content = load_dataset_content(*fx.project, fx.dataset);
    view.content_changed();
    auto* classes = view.findChild<QComboBox*>("class_filter");
    ASSERT_EQ(classes->count(), 1 + 2);
    EXPECT_EQ(classes->itemText(1), "disc");
    EXPECT_EQ(view.shown_class_counts().size(), 2u);
}
