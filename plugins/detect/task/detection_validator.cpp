#include "plugins/detect/task/detection_validator.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/base/error.h"
#include "core/data/augment/augment.h"
#include "core/engine/autocast.h"
#include "plugins/detect/task/batch_tensors.h"

namespace crucible::detect {

// One validated image (its ground truth and clipped predictions) ; in a sharded run a rank's share
// is gathered on rank 0, which matches all of them in the split's order, as one process does.
struct ImageOutcome {
    std::int64_t sample = 0;
    std::vector<GtBox> gts;
    std::vector<PredBox> preds;
};

namespace {

// The part of the letterboxed square that holds the image: predictions are clipped to it, as the
// reference clips boxes to the original image. Unknown sizes: the whole square.
cv::Rect image_region(const data::ImageRecord& rec, int imgsz) {
    if (rec.width <= 0 || rec.height <= 0) return {0, 0, imgsz, imgsz};
    return data::val_content_region(rec.width, rec.height, imgsz);
}

template <class T>
void put(std::string& out, const T& value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T take(const std::string& in, std::size_t& at) {
    if (at + sizeof(T) > in.size())
        throw Error("sharded validation: a rank's matches are cut short");
    T value;
    std::memcpy(&value, in.data() + at, sizeof value);
    at += sizeof value;
    return value;
}

std::string encode(const std::vector<ImageOutcome>& images) {
    std::string out;
    for (const auto& im : images) {
        put(out, im.sample);
        put(out, static_cast<std::int64_t>(im.gts.size()));
        for (const auto& g : im.gts) {
            put(out, g.cls);
            for (double v : {g.x1, g.y1, g.x2, g.y2})
                put(out, v);
        }
        put(out, static_cast<std::int64_t>(im.preds.size()));
        for (const auto& p : im.preds) {
            for (double v : {p.x1, p.y1, p.x2, p.y2})
                put(out, v);
            put(out, p.conf);
            put(out, p.cls);
        }
    }
    return out;
}

void decode(const std::string& in, std::vector<ImageOutcome>& images) {
    std::size_t at = 0;
    while (at < in.size()) {
        ImageOutcome im;
        im.sample = take<std::int64_t>(in, at);
        im.gts.resize(static_cast<std::size_t>(take<std::int64_t>(in, at)));
        for (auto& g : im.gts) {
            g.cls = take<int>(in, at);
            g.x1 = take<double>(in, at);
            g.y1 = take<double>(in, at);
            g.x2 = take<double>(in, at);
            g.y2 = take<double>(in, at);
        }
        im.preds.resize(static_cast<std::size_t>(take<std::int64_t>(in, at)));
        for (auto& p : im.preds) {
            p.x1 = take<double>(in, at);
            p.y1 = take<double>(in, at);
            p.x2 = take<double>(in, at);
            p.y2 = take<double>(in, at);
            p.conf = take<float>(in, at);
            p.cls = take<int>(in, at);
        }
        images.push_back(std::move(im));
    }
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
    lo.shard = options_.rank;
    lo.shards = options_.world_size;
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

ValidationResult DetectionValidator::run(DetectionModelImpl& model,
                                         engine::Collective* collective) {
    const auto started = std::chrono::steady_clock::now();
    const bool sharded = collective && options_.world_size > 1;
    torch::NoGradGuard no_grad;
    model.eval();
    const torch::Device device = model.parameters().front().device();
    // A rank divides by its own target-score sum unclamped, so that sum x loss gives back the
    // sums the batch's loss is made of; the clamp of 1 applies to the batch's global sum.
    DetectionLoss loss(DetectionLossOptions(model.num_classes())
                           .strides(model.strides())
                           .box_gain(options_.box_gain)
                           .cls_gain(options_.cls_gain)
                           .dfl_gain(options_.dfl_gain)
                           .min_target_scores_sum(sharded ? 1e-9 : 1.0));
    ValidationResult result;
    result.confusion =
        ConfusionMatrix(class_count_, options_.confusion_conf, options_.confusion_iou);
    std::vector<ImageOutcome> mine;  // sharded: this rank's images, matched on rank 0
    int loss_batches = 0;
    loader_->start_epoch({0, 0});
    while (auto batch = loader_->next()) {
        if (batch->size == 0 && !sharded) continue;
        // Sharded: the three loss sums, the target-score sum and the images of the global
        // batch, over the ranks (every rank takes part, an empty slice too).
        std::vector<double> sums(5, 0.0);
        if (batch->size == 0) {
            collective->sum(sums);
            if (sums[4] > 0) {
                const double t = std::max(sums[3], 1.0);
                for (int k = 0; k < 3; ++k)
                    result.losses[static_cast<std::size_t>(k)] +=
                        sums[static_cast<std::size_t>(k)] / t;
                ++loss_batches;
            }
            loader_->recycle(std::move(*batch));
            continue;
        }
        const torch::Tensor images = batch_images(*batch, device);
        DetectionOutput out;
        {
            engine::AutocastGuard autocast(engine::AutocastMode::cuda_fp16(device.is_cuda()));
            out = model.forward(images);
        }
        const auto batch_loss = loss(out.levels, batch_targets(*batch, device));
        const auto losses = batch_loss.items.to(torch::kCPU, torch::kDouble);
        if (sharded) {
            const double t_local = batch_loss.target_scores_sum.item<double>();
            for (int k = 0; k < 3; ++k)
                sums[static_cast<std::size_t>(k)] = losses[k].item<double>() * t_local;
            sums[3] = t_local;
            sums[4] = batch->size;
            collective->sum(sums);
            const double t = std::max(sums[3], 1.0);
            for (int k = 0; k < 3; ++k)
                result.losses[static_cast<std::size_t>(k)] += sums[static_cast<std::size_t>(k)] / t;
        } else {
            for (int k = 0; k < 3; ++k)
                result.losses[static_cast<std::size_t>(k)] += losses[k].item<double>();
        }
        ++loss_batches;
        auto outcomes = batch_outcomes(
            *batch, non_max_suppression(out.decoded.to(torch::kFloat32), options_.nms));
        for (auto& im : outcomes) {
            if (sharded)
                mine.push_back(std::move(im));
            else
                add_outcome(im, result);
        }
        loader_->recycle(std::move(*batch));
    }
    if (loss_batches > 0)
        for (auto& v : result.losses)
            v /= loss_batches;
    if (sharded) {
        const auto shares = collective->all_gather(encode(mine));
        if (options_.rank == 0) {
            std::vector<ImageOutcome> all;
            for (const auto& bytes : shares)
                decode(bytes, all);
            // The split's order (the loader does not shuffle it), as one process matches them:
            // ties in confidence then sort alike.
            std::sort(all.begin(), all.end(), [](const ImageOutcome& a, const ImageOutcome& b) {
                return a.sample < b.sample;
            });
            for (auto& im : all)
                add_outcome(im, result);
        }
    }
    result.metrics = result.stats.compute();
    result.bad = loader_->take_bad_samples();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

std::vector<ImageOutcome> DetectionValidator::batch_outcomes(
    const data::Batch& batch, const std::vector<torch::Tensor>& detections) const {
    if (detections.size() != static_cast<std::size_t>(batch.size))
        throw Error("validation: " + std::to_string(detections.size()) +
                    " results for a batch of " + std::to_string(batch.size) + " images");
    const float s = static_cast<float>(batch.imgsz);
    std::vector<ImageOutcome> out(static_cast<std::size_t>(batch.size));
    for (std::int64_t r = 0; r < batch.box_count(); ++r) {
        const float* row = batch.boxes.data() + r * 6;
        const auto image = static_cast<std::size_t>(row[0]);
        if (image >= out.size()) continue;
        GtBox g;
        g.cls = static_cast<int>(row[1]);
        g.x1 = (row[2] - row[4] / 2) * s;
        g.y1 = (row[3] - row[5] / 2) * s;
        g.x2 = (row[2] + row[4] / 2) * s;
        g.y2 = (row[3] + row[5] / 2) * s;
        out[image].gts.push_back(g);
    }
    for (int i = 0; i < batch.size; ++i) {
        auto& im = out[static_cast<std::size_t>(i)];
        im.sample = batch.sample_ids[static_cast<std::size_t>(i)];
        const cv::Rect region =
            image_region(*records_[static_cast<std::size_t>(im.sample)], batch.imgsz);
        im.preds = to_pred_boxes(detections[static_cast<std::size_t>(i)]);
        for (auto& p : im.preds) {
            const double x1 = region.x, x2 = region.br().x;
            const double y1 = region.y, y2 = region.br().y;
            p.x1 = std::clamp(p.x1, x1, x2);
            p.x2 = std::clamp(p.x2, x1, x2);
            p.y1 = std::clamp(p.y1, y1, y2);
            p.y2 = std::clamp(p.y2, y1, y2);
        }
    }
    return out;
}

void DetectionValidator::add_outcome(ImageOutcome& image, ValidationResult& result) const {
    const auto* rec = records_.at(static_cast<std::size_t>(image.sample));
    if (options_.on_image) {
        const cv::Rect r = image_region(*rec, options_.imgsz);
        options_.on_image({*rec, image.gts, image.preds, {r.x, r.y, r.width, r.height}});
    }
    result.confusion.add_image(image.gts, image.preds);
    result.stats.add_image(image.gts, std::move(image.preds), rec->tags);
}

ValidationResult DetectionValidator::run(const DecodedForward& forward) {
    return run_detections([&](const torch::Tensor& images) {
        return non_max_suppression(forward(images).to(torch::kFloat32), options_.nms);
    });
}

ValidationResult DetectionValidator::run_detections(const DetectionsForward& forward) {
    const auto started = std::chrono::steady_clock::now();
    ValidationResult result;
    result.confusion =
        ConfusionMatrix(class_count_, options_.confusion_conf, options_.confusion_iou);
    loader_->start_epoch({0, 0});
    while (auto batch = loader_->next()) {
        if (batch->size > 0) {
            for (auto& im : batch_outcomes(*batch, forward(batch_images(*batch, torch::kCPU))))
                add_outcome(im, result);
        }
        loader_->recycle(std::move(*batch));
    }
    result.metrics = result.stats.compute();
    result.bad = loader_->take_bad_samples();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

}  // namespace crucible::detect
