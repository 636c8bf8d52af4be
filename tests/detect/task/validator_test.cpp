// The detection validator's losses use the run's loss gains, so val/box_loss and train/box_loss
// are on the same scale whatever box=/cls=/dfl= say.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/data/dataset_io.h"
#include "core/data/synth/synth.h"
#include "plugins/detect/task/detection_validator.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::detect {
namespace {

TEST(DetectionValidator, ValidationLossesFollowTheLossGains) {
    const auto dir = test_support::scratch_dir("detect_validator_gains");
    data::SynthOptions so;
    so.train = 1;
    so.val = 4;
    so.classes = 2;
    so.imgsz = 64;
    const auto yaml = data::write_synth_dataset(dir / "data", so);
    data::LoadOptions lo;
    lo.read_image_sizes = true;
    const auto dataset = data::load_detection_dataset(yaml, data::DatasetFormat::Auto, lo).dataset;
    torch::manual_seed(0);
    DetectionModel model(DetectionModelOptions(yolo_scale('n'), 2));
    ValidatorOptions defaults;
    defaults.imgsz = 64;
    defaults.batch = 4;
    ValidatorOptions scaled = defaults;
    scaled.box_gain = 2 * defaults.box_gain;
    scaled.cls_gain = 3 * defaults.cls_gain;
    scaled.dfl_gain = 0.5 * defaults.dfl_gain;
    const auto a = DetectionValidator(dataset, "val", defaults).run(*model);
    const auto b = DetectionValidator(dataset, "val", scaled).run(*model);
    ASSERT_GT(a.losses[0], 0);
    ASSERT_GT(a.losses[1], 0);
    ASSERT_GT(a.losses[2], 0);
    EXPECT_NEAR(b.losses[0] / a.losses[0], 2.0, 1e-4);
    EXPECT_NEAR(b.losses[1] / a.losses[1], 3.0, 1e-4);
    EXPECT_NEAR(b.losses[2] / a.losses[2], 0.5, 1e-4);
    EXPECT_EQ(a.metrics.images, 4);

    // The run's pixel limit holds in validation too: images over a 100-pixel limit are
    // left out and reported, not decoded.
    ValidatorOptions small = defaults;
    small.limits.max_pixels = 100;
    const auto c = DetectionValidator(dataset, "val", small).run(*model);
    EXPECT_EQ(c.bad.size(), 4u);
    EXPECT_EQ(c.metrics.images, 0);
}

}  // namespace
}  // namespace crucible::detect
