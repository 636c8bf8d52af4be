// model= sources of the detection task: fresh scales, Ultralytics .pt, Crucible .safetensors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/weights_file.h"
#include "plugins/detect/task/model_source.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::detect {
namespace {

namespace fs = std::filesystem;

TEST(ModelSource, FreshScaleNeedsAClassCount) {
    auto m = load_detection_model("yolov8n.yaml", 4);
    EXPECT_EQ(m.scale.name, 'n');
    EXPECT_FALSE(m.pretrained);
    EXPECT_EQ(count_parameters(*m.model), 3011628);
    try {
        load_detection_model("yolov8s", std::nullopt);
        FAIL() << "a fresh model without a class count was accepted";
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "model");
        EXPECT_NE(std::string(e.what()).find("data="), std::string::npos) << e.what();
    }
}

TEST(ModelSource, RejectsUnknownNamesAndMissingFiles) {
    EXPECT_THROW(load_detection_model("resnet50", 4), InputError);
    EXPECT_THROW(load_detection_model("", 4), InputError);
    try {
        load_detection_model("/nonexistent/dir/best.pt", 4);
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
    }
    EXPECT_THROW(load_detection_model("yolov8n", 0), InputError);
}

TEST(ModelSource, SafetensorsRoundTripKeepsScaleNamesAndWeights) {
    const auto dir = test_support::scratch_dir("model_source_roundtrip");
    torch::manual_seed(3);
    auto original = DetectionModel(DetectionModelOptions(yolo_scale('n'), 3));
    {
        torch::NoGradGuard g;
        for (auto& p : original->parameters())
            p.add_(0.01);  // not the initial values
    }
    const auto file = dir / "w.safetensors";
    engine::save_module_safetensors(
        *original, file, detection_weights_metadata(yolo_scale('n'), 3, {"a", "b", "c"}));

    const auto same = load_detection_model(path_to_utf8(file), std::nullopt);
    EXPECT_TRUE(same.pretrained);
    EXPECT_FALSE(same.new_head);
    EXPECT_EQ(same.model->num_classes(), 3);
    EXPECT_EQ(same.names, (std::vector<std::string>{"a", "b", "c"}));
    auto a = original->named_parameters();
    for (const auto& p : same.model->named_parameters())
        EXPECT_TRUE(torch::equal(p.value(), a[p.key()])) << p.key();

    // Another class count: the class branch is new, the backbone is kept.
    const auto other = load_detection_model(path_to_utf8(file), 5);
    EXPECT_TRUE(other.new_head);
    EXPECT_EQ(other.model->num_classes(), 5);
    auto b = other.model->named_parameters();
    EXPECT_TRUE(torch::equal(b["model.0.conv.weight"], a["model.0.conv.weight"]));
    EXPECT_NE(b["model.22.cv3.0.2.weight"].size(0), a["model.22.cv3.0.2.weight"].size(0));
}

TEST(ModelSource, SafetensorsWithoutScaleMetadataIsRefusedWithAHint) {
    const auto dir = test_support::scratch_dir("model_source_nometa");
    auto model = DetectionModel(DetectionModelOptions(yolo_scale('n'), 2));
    const auto file = dir / "plain.safetensors";
    engine::save_module_safetensors(*model, file, {});
    try {
        load_detection_model(path_to_utf8(file), 2);
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("weights="), std::string::npos) << e.what();
    }
}

TEST(ModelSource, UltralyticsCheckpointWithItsOwnAndAnotherClassCount) {
    const fs::path pt = fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt";
    ASSERT_TRUE(fs::exists(pt)) << "fixture missing: " << pt;
    const auto own = load_detection_model(path_to_utf8(pt), std::nullopt);
    EXPECT_TRUE(own.pretrained);
    EXPECT_FALSE(own.new_head);
    EXPECT_EQ(own.model->num_classes(), 4);
    EXPECT_EQ(own.names.size(), 4u);
    const auto two = load_detection_model(path_to_utf8(pt), 2);
    EXPECT_TRUE(two.new_head);
    EXPECT_EQ(two.model->num_classes(), 2);
    auto a = own.model->named_parameters();
    auto b = two.model->named_parameters();
    EXPECT_TRUE(torch::equal(a["model.9.cv2.conv.weight"], b["model.9.cv2.conv.weight"]));
}

}  // namespace
}  // namespace crucible::detect
