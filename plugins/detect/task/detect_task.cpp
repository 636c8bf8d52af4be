#include "plugins/detect/task/detect_task.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/json.h"
#include "core/data/dataset_io.h"
#include "core/data/loader/batch_loader.h"
#include "core/data/ops/dataset_ops.h"
#include "core/engine/device_upload.h"
#include "core/engine/ema.h"
#include "core/engine/step_profile.h"
#include "core/engine/task.h"
#include "plugins/detect/loss/detection_loss.h"
#include "plugins/detect/metrics/metrics_report.h"
#include "plugins/detect/task/batch_tensors.h"
#include "plugins/detect/task/detect_schema.h"
#include "plugins/detect/task/detection_validator.h"
#include "plugins/detect/task/model_source.h"
#include "plugins/detect/task/prediction_images.h"

namespace crucible::detect {
namespace {

// What a training batch carries through the engine.
struct DetectBatch {
    torch::Tensor images;
    DetectionTargets targets;
};

// Training batches, one ahead: while the trainer runs step k, batch k+1 is already on its way
// to the device (engine::DeviceUpload: pinned memory and a side stream on CUDA).
class DetectSource : public engine::BatchSource {
  public:
    DetectSource(std::unique_ptr<data::BatchLoader> loader, int batch, torch::Device device,
                 std::function<void(const data::BadSample&)> report_bad)
        : loader_(std::move(loader)),
          batch_(batch),
          upload_(device),
          report_bad_(std::move(report_bad)) {}
    std::int64_t batches_per_epoch() const override { return loader_->batches_in_epoch(0); }
    std::int64_t items_per_epoch() const override { return loader_->sample_count(); }
    void start_epoch(int epoch, std::int64_t index) override {
        pending_.reset();
        loader_->start_epoch(
            {epoch, std::min<std::int64_t>(index * batch_, loader_->sample_count())});
    }
    std::optional<engine::Batch> next() override {
        if (!pending_) pending_ = upload_next();
        Pending now = std::move(*pending_);
        if (now.host.size == 0) return std::nullopt;  // the end of the epoch (pending_ stays so)
        upload_.hand_over({now.pixels, now.boxes});
        pending_ = upload_next();  // its copy runs while this batch's step computes
        engine::Batch out;
        out.size = now.host.size;
        out.data = DetectBatch{images_from_pixels(now.pixels), targets_from_table(now.boxes)};
        loader_->recycle(std::move(now.host));  // after the CPU conversion has read its pixels
        return out;
    }

  private:
    struct Pending {
        data::Batch host;  // size 0: the end of the epoch
        torch::Tensor pixels, boxes;
    };

    Pending upload_next() {
        Pending p;
        while (auto b = loader_->next()) {
            // Unreadable images are reported here, on the engine's thread.
            for (const auto& bad : loader_->take_bad_samples())
                report_bad_(bad);
            if (b->size == 0) {  // every image of the batch was unreadable: counted, skipped
                loader_->recycle(std::move(*b));
                continue;
            }
            p.host = std::move(*b);
            p.pixels = upload_.start(pixel_view(p.host));
            // The box table is copied on the CPU too: the targets outlive the batch's buffer.
            p.boxes = upload_.start(box_table_view(p.host).clone());
            return p;
        }
        return p;
    }

    std::unique_ptr<data::BatchLoader> loader_;
    int batch_;
    engine::DeviceUpload upload_;
    std::function<void(const data::BadSample&)> report_bad_;
    std::optional<Pending> pending_;
};

// Validation images written with the best model's predictions at the end of a run.
constexpr int kPredictionImages = 8;

class DetectTask : public engine::Task {
  public:
    OptionSchema schema() const override { return detect_task_schema(); }

    void setup(const engine::TaskContext& c) override {
        ctx_ = c;
        const Json& cfg = c.config;
        augment_ = augment_options_from(cfg);
        batch_ = static_cast<int>(cfg["batch"].get<long long>());
        epochs_ = static_cast<int>(cfg["epochs"].get<long long>());

        const std::string data_path = cfg["data"].get<std::string>();
        // max_pixels holds wherever an image is read: dataset load, training and validation.
        limits_.max_pixels = static_cast<std::uint64_t>(cfg["max_pixels"].get<long long>());
        data::LoadOptions lo;
        lo.read_image_sizes = true;
        lo.image_limits = limits_;
        auto loaded =
            data::load_detection_dataset(path_from_utf8(data_path), data::DatasetFormat::Auto, lo);
        for (const auto& line : data::load_problem_lines(loaded, data_path, 20))
            c.log("warning", line);
        dataset_ = std::move(loaded.dataset);
        const auto& names = dataset_.class_names;
        if (names.empty()) throw InputError("data", data_path + ": the dataset names no classes");
        dataset_hash_ = data::manifest_id(data::dataset_manifest(dataset_));

        std::int64_t train_count = 0, val_count = 0;
        for (const auto& rec : dataset_.images) {
            train_count += rec.split == "train";
            val_count += rec.split == "val";
        }
        if (train_count == 0)
            throw InputError("data", data_path + ": no training images (split 'train')");
        val_split_ = "val";
        if (val_count == 0) {
            c.log("warning", data_path + ": no validation images; validating on the training set");
            val_split_ = "train";
        }

        loaded_ = load_detection_model(cfg["model"].get<std::string>(),
                                       static_cast<std::int64_t>(names.size()));
        c.log("info", loaded_.description);
        if (!loaded_.names.empty() && !loaded_.new_head && loaded_.names != names)
            c.log("warning",
                  "the model's class names differ from the dataset's; the dataset's "
                  "names are used");

        const int threads = std::max(1, c.workers);
        int loader_threads = static_cast<int>(cfg["loader_threads"].get<long long>());
        if (loader_threads == 0) {
            const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            loader_threads =
                c.device.is_cuda() ? std::clamp(cores - 1, 2, 16) : std::max(1, threads / 4);
        }
        loader_threads_ = loader_threads;

        ValidatorOptions vo;
        vo.imgsz = augment_.imgsz;
        vo.limits = limits_;
        const int val_batch = static_cast<int>(cfg["val_batch"].get<long long>());
        vo.batch = val_batch > 0 ? val_batch : 2 * batch_;
        vo.workers = loader_threads_;
        vo.cache = cfg["cache"].get<bool>();
        vo.seed = static_cast<std::uint64_t>(c.seed);
        vo.rank = c.rank;  // every rank validates its share (validates_in_shards)
        vo.world_size = c.world_size;
        vo.nms = nms_options_from(cfg);
        vo.box_gain = cfg["box"].get<double>();
        vo.cls_gain = cfg["cls"].get<double>();
        vo.dfl_gain = cfg["dfl"].get<double>();
        validator_ = std::make_unique<DetectionValidator>(dataset_, val_split_, vo);

        loss_ = std::make_unique<DetectionLoss>(
            DetectionLossOptions(static_cast<std::int64_t>(names.size()))
                .strides(loaded_.model->strides())
                .box_gain(vo.box_gain)
                .cls_gain(vo.cls_gain)
                .dfl_gain(vo.dfl_gain)
                .min_target_scores_sum(exact_ranks() ? 1e-9 : 1.0));
        c.log("info", "data: " + std::to_string(train_count) + " train / " +
                          std::to_string(validator_->image_count()) + " val images, " +
                          std::to_string(names.size()) + " classes, imgsz " +
                          std::to_string(augment_.imgsz) + ", " + std::to_string(loader_threads_) +
                          (loader_threads_ == 1 ? " loader thread" : " loader threads"));
    }

    std::unique_ptr<engine::BatchSource> train_data() override {
        data::LoaderOptions lo;
        lo.batch_size = batch_;  // the global batch; this rank makes its slice of it
        lo.shard = ctx_.rank;
        lo.shards = ctx_.world_size;
        lo.workers = loader_threads_;
        lo.prefetch = std::max(2, loader_threads_ + 1);
        lo.augment = true;
        lo.shuffle = true;
        lo.cache = ctx_.config["cache"].get<bool>();
        lo.epochs = epochs_;
        lo.seed = static_cast<std::uint64_t>(ctx_.seed);
        lo.augment_options = augment_;
        lo.limits = limits_;
        auto loader =
            std::make_unique<data::BatchLoader>(data::loader_samples(dataset_, "train"), lo);
        return std::make_unique<DetectSource>(std::move(loader), batch_, ctx_.device,
                                              [this](const data::BadSample& bad) { log_bad(bad); });
    }

    std::shared_ptr<torch::nn::Module> build_model() override {
        // A fresh module holding the loaded (or freshly initialised) weights: the engine calls
        // this for the model and for its EMA copy, and both must start equal.
        auto model = DetectionModel(DetectionModelOptions(loaded_.scale, num_classes()));
        engine::copy_module_state(*loaded_.model, *model);
        // Channels-last everywhere: oneDNN on the CPU and cuDNN's tensor-core kernels (with AMP)
        // are fastest with it, and the batches arrive in it.
        model->set_memory_format(torch::MemoryFormat::ChannelsLast);
        model->to(ctx_.device);
        if (ctx_.collective && ctx_.config["sync_bn"].get<bool>())
            enable_sync_batch_norm(*model, ctx_.collective);
        return model.ptr();
    }

    std::vector<std::string> loss_names() const override {
        return {"box_loss", "cls_loss", "dfl_loss"};
    }

    engine::LossOutput compute_loss(torch::nn::Module& model, const engine::Batch& batch) override {
        const auto& b = std::any_cast<const DetectBatch&>(batch.data);
        auto& yolo = dynamic_cast<DetectionModelImpl&>(model);
        std::vector<torch::Tensor> levels;
        {
            engine::PhaseTimer timer("forward");
            levels = yolo.forward_levels(b.images);
        }
        engine::PhaseTimer timer("loss");
        const auto result = (*loss_)(levels, b.targets);
        engine::LossOutput out{result.total, result.items};
        if (exact_ranks()) {
            // The loss is (batch size) x (sums / the batch's target-score sum, at least 1). A
            // rank scales it to the global batch's size and divides by its own sum (unclamped:
            // the loss options above), by whose share of the global sum (clamped at 1 there)
            // the trainer weighs it: the ranks then average to one process's loss. That costs
            // an all-reduce (and a device read) before each backward pass, so only with
            // sync_bn, where the ranks are meant to train what one process trains; otherwise
            // each rank's loss is its own, as in Ultralytics' DDP.
            out.total = result.total * (static_cast<double>(batch.global_size) /
                                        static_cast<double>(std::max<std::int64_t>(batch.size, 1)));
            out.count = result.target_scores_sum.item<double>();
            out.count_floor = 1.0;
        }
        return out;
    }

    std::vector<std::string> eval_columns() const override {
        return {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
                "metrics/mAP50-95(B)",  "val/box_loss",      "val/cls_loss",
                "val/dfl_loss"};
    }

    engine::EvalResult validate(torch::nn::Module& model) override {
        auto& yolo = dynamic_cast<DetectionModelImpl&>(model);
        const ValidationResult r = validator_->run(yolo, ctx_.collective);
        for (const auto& bad : r.bad)
            log_bad(bad);
        const DetectionMetrics& m = r.metrics;
        engine::EvalResult out;
        out.values = {{"metrics/precision(B)", m.precision}, {"metrics/recall(B)", m.recall},
                      {"metrics/mAP50(B)", m.map50},         {"metrics/mAP50-95(B)", m.map50_95},
                      {"val/box_loss", r.losses[0]},         {"val/cls_loss", r.losses[1]},
                      {"val/dfl_loss", r.losses[2]}};
        out.per_class = per_class_json(m, dataset_.class_names);
        out.fitness = m.fitness;
        char line[160];
        std::snprintf(line, sizeof line,
                      "val: %d images, %d instances  P %.3f  R %.3f  mAP50 %.3f  mAP50-95 %.3f  "
                      "(%.1fs)",
                      m.images, m.instances, m.precision, m.recall, m.map50, m.map50_95, r.seconds);
        if (ctx_.rank == 0) ctx_.log("info", line);  // the others hold no metrics of their own
        return out;
    }

    bool validates_in_shards() const override { return true; }

    // Ranks that together train exactly what one process trains (sync_bn=true).
    bool exact_ranks() const { return ctx_.world_size > 1 && ctx_.config["sync_bn"].get<bool>(); }

    int num_classes() const override { return static_cast<int>(dataset_.class_names.size()); }

    void on_epoch_start(int epoch, int epochs) override {
        const int close = augment_.close_mosaic;
        if (close > 0 && augment_.mosaic > 0 && epoch == epochs - close)
            ctx_.log("info", "closing mosaic for the last " + std::to_string(close) + " epochs");
    }

    Json weights_metadata() const override {
        Json out = Json::object();
        const auto& names = dataset_.class_names;
        for (const auto& [k, v] : detection_weights_metadata(
                 loaded_.scale, static_cast<std::int64_t>(names.size()), names))
            out[k] = v;
        return out;
    }

    std::string dataset_hash() const override { return dataset_hash_; }

    void save_artifacts(torch::nn::Module& best_model, const std::filesystem::path& dir) override {
        auto& yolo = dynamic_cast<DetectionModelImpl&>(best_model);
        const ValidationResult r = validator_->run(yolo);
        const auto& names = dataset_.class_names;
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        write_json_file(dir / kValidationReportArtifact,
                        validation_json({r.metrics, r.confusion, names}, /*curves=*/true));
        ctx_.log("info",
                 "best weights on " + val_split_ + ":\n" + results_table(r.metrics, names, true));
        // A few validation images with the best model's boxes, announced as samples.
        PredictOptions po;
        po.imgsz = augment_.imgsz;
        const auto files = write_prediction_images(yolo, dataset_, val_split_, po, limits_,
                                                   dir / "val_predictions", kPredictionImages);
        if (!ctx_.emit) return;
        for (const auto& file : files) {
            const auto rel = file.lexically_relative(dir).generic_u8string();
            const std::string name(rel.begin(), rel.end());
            ctx_.emit(make_artifact(name, "image"));
            ctx_.emit(make_sample({{"prompt", path_to_utf8(file.filename())}, {"image", name}}));
        }
    }

  private:
    void log_bad(const data::BadSample& bad) {
        ctx_.log("warning", "skipped " + path_to_utf8(bad.path) + ": " + bad.message);
    }

    engine::TaskContext ctx_;
    data::DetectionDataset dataset_;
    std::string dataset_hash_, val_split_;
    int batch_ = 16, epochs_ = 100, loader_threads_ = 1;
    data::AugmentOptions augment_;
    data::ImageLimits limits_;
    LoadedDetectionModel loaded_;
    std::unique_ptr<DetectionValidator> validator_;
    std::unique_ptr<DetectionLoss> loss_;
};

engine::RegisterTask registration({kDetectTaskId,
                                   "YOLOv8 object detection",
                                   {"detect"},
                                   "detect",
                                   [] { return std::make_unique<DetectTask>(); },
                                   "detection"});

}  // namespace

void ensure_detect_task_registered() {
    (void)&registration;
}

}  // namespace crucible::detect
