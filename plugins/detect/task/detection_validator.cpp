#include "plugins/detect/task/detection_validator.h"

#include <algorithm>
#include <chrono>

#include "core/base/error.h"
#include "core/data/augment/augment.h"
#include "core/engine/autocast.h"
#include "plugins/detect/task/batch_tensors.h"

namespace crucible::detect {
namespace {

// The part of the letterboxed square that holds the image: predictions are clipped to it, as the
// reference clips boxes to the original image. Unknown sizes: the whole square.
cv::Rect image_region(const data::ImageRecord& rec, int imgsz) {
    if (rec.width <= 0 || rec.height <= 0) return {0, 0, imgsz, imgsz};
    return data::val_content_region(rec.width, rec.height, imgsz);
}

}  // namespace

DetectionValidator::DetectionValidator(const data::DetectionDataset& dataset,
                                       const std::string& split, ValidatorOptions options)
    : options_(options), class_count_(static_cast<int>(dataset.class_names.size())) {
    for (const auto& rec : dataset.images)
        if (split.empty() || rec.split == split) records_.push_back(&rec);
    if (records_.empty())
        throw InputError("data", split.empty()
                                     ? std::string("the dataset has no images")
                                     : "the dataset has no images in split '" + split + "'");
    data::LoaderOptions lo;
    lo.batch_size = std::max(1, options_.batch);
    lo.workers = std::max(0, options_.workers);
    lo.augment = false;
    lo.shuffle = false;
    lo.cache = options_.cache;
    lo.seed = options_.seed;
    lo.augment_options.imgsz = options_.imgsz;
    lo.limits = options_.limits;
    loader_ = std::make_unique<data::BatchLoader>(data::loader_samples(dataset, split), lo);
}

std::int64_t DetectionValidator::image_count() const {
    return static_cast<std::int64_t>(records_.size());
}

ValidationResult DetectionValidator::run(DetectionModelImpl& model) {
    const auto started = std::chrono::steady_clock::now();
    torch::NoGradGuard no_grad;
    model.eval();
    const torch::Device device = model.parameters().front().device();
    DetectionLoss loss(DetectionLossOptions(model.num_classes())
                           .strides(model.strides())
                           .box_gain(options_.box_gain)
                           .cls_gain(options_.cls_gain)
                           .dfl_gain(options_.dfl_gain));
    ValidationResult result;
    result.confusion =
        ConfusionMatrix(class_count_, options_.confusion_conf, options_.confusion_iou);
    int loss_batches = 0;
    loader_->start_epoch({0, 0});
    while (auto batch = loader_->next()) {
        if (batch->size == 0) continue;
        const torch::Tensor images = batch_images(*batch, device);
        DetectionOutput out;
        {
            engine::AutocastGuard autocast(engine::AutocastMode::cuda_fp16(device.is_cuda()));
            out = model.forward(images);
        }
        const auto losses =
            loss(out.levels, batch_targets(*batch, device)).items.to(torch::kCPU, torch::kDouble);
        for (int k = 0; k < 3; ++k)
            result.losses[static_cast<std::size_t>(k)] += losses[k].item<double>();
        ++loss_batches;
        const auto detections = non_max_suppression(out.decoded.to(torch::kFloat32), options_.nms);
        const float s = static_cast<float>(batch->imgsz);
        std::vector<std::vector<GtBox>> gts(static_cast<std::size_t>(batch->size));
        for (std::int64_t r = 0; r < batch->box_count(); ++r) {
            const float* row = batch->boxes.data() + r * 6;
            const auto image = static_cast<std::size_t>(row[0]);
            if (image >= gts.size()) continue;
            GtBox g;
            g.cls = static_cast<int>(row[1]);
            g.x1 = (row[2] - row[4] / 2) * s;
            g.y1 = (row[3] - row[5] / 2) * s;
            g.x2 = (row[2] + row[4] / 2) * s;
            g.y2 = (row[3] + row[5] / 2) * s;
            gts[image].push_back(g);
        }
        for (int i = 0; i < batch->size; ++i) {
            const auto* rec =
                records_[static_cast<std::size_t>(batch->sample_ids[static_cast<std::size_t>(i)])];
            const cv::Rect region = image_region(*rec, batch->imgsz);
            std::vector<PredBox> preds = to_pred_boxes(detections[static_cast<std::size_t>(i)]);
            for (auto& p : preds) {
                const double x1 = region.x, x2 = region.br().x;
                const double y1 = region.y, y2 = region.br().y;
                p.x1 = std::clamp(p.x1, x1, x2);
                p.x2 = std::clamp(p.x2, x1, x2);
                p.y1 = std::clamp(p.y1, y1, y2);
                p.y2 = std::clamp(p.y2, y1, y2);
            }
            result.confusion.add_image(gts[static_cast<std::size_t>(i)], preds);
            result.stats.add_image(gts[static_cast<std::size_t>(i)], std::move(preds), rec->tags);
        }
        loader_->recycle(std::move(*batch));
    }
    if (loss_batches > 0)
        for (auto& v : result.losses)
            v /= loss_batches;
    result.metrics = result.stats.compute();
    result.bad = loader_->take_bad_samples();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

}  // namespace crucible::detect
