#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <opencv2/imgproc.hpp>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/image_io.h"
#include "core/data/synth/synth.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace crucible;
using namespace crucible::data;

namespace {

fs::path temp_dir(const std::string& name) {
    return test_support::scratch_dir("synth_" + name);
}

SynthOptions small_options(std::uint64_t seed) {
    SynthOptions o;
    o.train = 3;
    o.val = 2;
    o.classes = 6;
    o.imgsz = 96;
    o.seed = seed;
    return o;
}

// Every file below `root`, relative path -> bytes.
std::map<std::string, std::string> all_files(const fs::path& root) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file())
            out[fs::relative(e.path(), root).generic_string()] = read_file_bytes(e.path());
    return out;
}

}  // namespace

TEST(Synth, SameSeedGivesByteIdenticalFilesAndOtherSeedDiffers) {
    const fs::path a = temp_dir("a"), b = temp_dir("b"), c = temp_dir("c");
    write_synth_dataset(a, small_options(7));
    write_synth_dataset(b, small_options(7));
    write_synth_dataset(c, small_options(8));
    const auto fa = all_files(a), fb = all_files(b), fc = all_files(c);
    EXPECT_EQ(fa.size(), 1u + 2 * (3 + 2));
    EXPECT_TRUE(fa.count("data.yaml"));
    EXPECT_TRUE(fa.count("images/train/000002.jpg"));
    EXPECT_TRUE(fa.count("labels/val/000001.txt"));
    EXPECT_EQ(fa, fb);
    EXPECT_NE(fa.at("images/train/000000.jpg"), fc.at("images/train/000000.jpg"));
    // The yaml names the classes in order.
    EXPECT_NE(fa.at("data.yaml").find("  3: star\n"), std::string::npos);
    for (const auto& p : {a, b, c})
        fs::remove_all(p);
}

TEST(Synth, LabelFilesHoldTheBoxesOfTheSamples) {
    const fs::path dir = temp_dir("labels");
    const SynthOptions o = small_options(3);
    write_synth_dataset(dir, o);
    for (int i = 0; i < o.train; ++i) {
        const SynthSample s = make_synth_sample(o, "train", i);
        char name[32];
        std::snprintf(name, sizeof name, "%06d.txt", i);
        std::istringstream in(read_file_bytes(dir / "labels" / "train" / name));
        std::size_t rows = 0;
        int cls;
        double cx, cy, w, h;
        while (in >> cls >> cx >> cy >> w >> h) {
            ASSERT_LT(rows, s.boxes.size());
            const Box& b = s.boxes[rows++];
            EXPECT_EQ(cls, b.cls);
            EXPECT_NEAR(cx, b.cx, 1e-6);
            EXPECT_NEAR(cy, b.cy, 1e-6);
            EXPECT_NEAR(w, b.w, 1e-6);
            EXPECT_NEAR(h, b.h, 1e-6);
        }
        EXPECT_EQ(rows, s.boxes.size());
        // The JPEG on disk has the sample's size.
        const cv::Mat img = read_image(dir / "images" / "train" / (std::string(name, 6) + ".jpg"));
        EXPECT_EQ(img.size(), s.image.size());
    }
    fs::remove_all(dir);
}

TEST(Synth, BoxesAreTightAroundTheDrawnPixels) {
    SynthOptions o = small_options(11);
    o.imgsz = 160;
    o.classes = synth_max_classes();
    int border_touching = 0, objects = 0;
    std::set<int> classes_seen;
    for (int i = 0; i < 30; ++i) {
        const SynthSample s = make_synth_sample(o, "train", i, /*with_instances=*/true);
        ASSERT_EQ(s.instances.size(), s.image.size());
        const int W = s.image.cols, H = s.image.rows;
        EXPECT_EQ(std::max(W, H), o.imgsz);
        ASSERT_FALSE(s.boxes.empty());
        for (std::size_t k = 0; k < s.boxes.size(); ++k) {
            const Box& b = s.boxes[k];
            EXPECT_EQ(box_problem(b, o.classes), "");
            classes_seen.insert(b.cls);
            ++objects;
            cv::Mat mask = s.instances == static_cast<int>(k + 1);
            const cv::Rect r = cv::boundingRect(mask);
            // The label is exactly the pixel rectangle of the drawn object.
            EXPECT_NEAR(b.cx * W, r.x + r.width / 2.0, 1e-9);
            EXPECT_NEAR(b.cy * H, r.y + r.height / 2.0, 1e-9);
            EXPECT_NEAR(b.w * W, r.width, 1e-9);
            EXPECT_NEAR(b.h * H, r.height, 1e-9);
            // Every border row/column of the box holds object pixels (tight), and the object
            // has one colour.
            EXPECT_GT(
                cv::countNonZero(mask.row(r.y)(cv::Range::all(), cv::Range(r.x, r.x + r.width))),
                0);
            EXPECT_GT(cv::countNonZero(mask(cv::Rect(r.x, r.y + r.height - 1, r.width, 1))), 0);
            EXPECT_GT(cv::countNonZero(mask(cv::Rect(r.x, r.y, 1, r.height))), 0);
            EXPECT_GT(cv::countNonZero(mask(cv::Rect(r.x + r.width - 1, r.y, 1, r.height))), 0);
            cv::Mat colours;
            s.image.copyTo(colours, mask);
            double lo, hi;
            for (int c = 0; c < 3; ++c) {
                cv::Mat ch;
                cv::extractChannel(s.image, ch, c);
                cv::minMaxLoc(ch, &lo, &hi, nullptr, nullptr, mask);
                EXPECT_EQ(lo, hi);
            }
            if (r.x == 0 || r.y == 0 || r.x + r.width == W || r.y + r.height == H)
                ++border_touching;
        }
    }
    EXPECT_GT(border_touching, 0);
    EXPECT_GE(objects, 30);
    EXPECT_GE(classes_seen.size(), 8u);
}

TEST(Synth, RejectsBadOptions) {
    SynthOptions o = small_options(1);
    o.classes = 0;
    EXPECT_THROW(make_synth_sample(o, "train", 0), InputError);
    o.classes = synth_max_classes() + 1;
    EXPECT_THROW(make_synth_sample(o, "train", 0), InputError);
    o = small_options(1);
    o.imgsz = 8;
    EXPECT_THROW(make_synth_sample(o, "train", 0), InputError);
    o = small_options(1);
    o.train = -1;
    const fs::path bad = temp_dir("bad");
    EXPECT_THROW(write_synth_dataset(bad, o), InputError);
    fs::remove_all(bad);
    EXPECT_EQ(synth_class_names(3), (std::vector<std::string>{"circle", "rectangle", "triangle"}));
}
