#pragma once
// Validation of a detection model on one split of a dataset, inside training (every epoch) and
// outside it (`crucible val detect model=...`): letterboxed batches from the loader, eval-mode
// forward, the loss on the raw maps (val/box_loss ...), class-aware NMS (conf 0.001, IoU 0.7,
// 300 per image), then the Ultralytics metrics, the confusion matrix and per-tag breakdowns.
#include <torch/torch.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/data/detection_types.h"
#include "core/data/loader/batch_loader.h"
#include "core/engine/distributed.h"
#include "plugins/detect/loss/detection_loss.h"
#include "plugins/detect/metrics/detection_metrics.h"
#include "plugins/detect/metrics/nms.h"
#include "plugins/detect/model/yolo_model.h"
#include "plugins/detect/task/detector_functions.h"

namespace crucible::detect {

// One validated image as the validator scores it: boxes in the pixels of the letterboxed square,
// `region` the part of the square the image fills (x, y, width, height).
struct ValidatedImage {
    const data::ImageRecord& record;
    const std::vector<GtBox>& gts;
    const std::vector<PredBox>& preds;
    std::array<int, 4> region;
};

struct ValidatorOptions {
    int imgsz = 640;
    int batch = 32;
    int workers = 1;  // loader threads
    bool cache = false;
    std::uint64_t seed = 0;
    NmsOptions nms;
    // Loss gains, as in training: val/box_loss and train/box_loss are on the same scale.
    double box_gain = 7.5, cls_gain = 0.5, dfl_gain = 1.5;
    double confusion_conf = 0.25;
    double confusion_iou = 0.45;
    data::ImageLimits limits;  // larger images are bad samples (left out, reported)
    // Called for every image scored (in rank 0's process): per-image reports, drill-down.
    std::function<void(const ValidatedImage&)> on_image;
    // Sharded validation in a data-parallel run: this rank's slice of each batch of `batch`.
    int rank = 0;
    int world_size = 1;
};

struct ValidationResult {
    DetectionMetrics metrics;
    ConfusionMatrix confusion{1};
    DetectionStats stats;              // per image, for compute_by_tag
    std::array<double, 3> losses{};    // val box, cls, dfl (mean over batches)
    std::vector<data::BadSample> bad;  // images first found unreadable (left out) in this run
    double seconds = 0;
};

struct ImageOutcome;

class DetectionValidator {
  public:
    // `split` "" = every image. Throws InputError("data", ...) when the split has no images.
    DetectionValidator(const data::DetectionDataset& dataset, const std::string& split,
                       ValidatorOptions options);

    // Runs the model (its device; eval mode is set here, the caller restores train mode).
    // With `collective` (the options' world_size ranks all calling run), each rank validates
    // its slices and rank 0's result holds the metrics of the whole split, equal to one
    // process's: the images' boxes and predictions are gathered and matched there in the
    // split's order, and the losses normalized by each batch's global target-score sum. The
    // other ranks' results hold only the losses.
    ValidationResult run(DetectionModelImpl& model, engine::Collective* collective = nullptr);

    // The same metrics for any model given as a function (no losses; one process).
    ValidationResult run(const DecodedForward& forward);
    // ... and for one whose NMS is its own (the options' nms settings are then not used).
    ValidationResult run_detections(const DetectionsForward& forward);

    std::int64_t image_count() const;

  private:
    // A batch's images with their ground truth and clipped predictions (the kept boxes of each
    // image), in the batch's order.
    std::vector<ImageOutcome> batch_outcomes(const data::Batch& batch,
                                             const std::vector<torch::Tensor>& detections) const;
    void add_outcome(ImageOutcome& image, ValidationResult& result) const;

    ValidatorOptions options_;
    int class_count_ = 0;
    std::vector<const data::ImageRecord*> records_;  // parallel to the loader's samples
    std::unique_ptr<data::BatchLoader> loader_;
};

}  // namespace crucible::detect
