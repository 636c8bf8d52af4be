#include "plugins/detect/task/detect_task.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/data/dataset_io.h"
#include "core/data/loader/batch_loader.h"
#include "core/data/ops/dataset_ops.h"
#include "core/engine/step_profile.h"
#include "core/engine/task.h"
#include "plugins/detect/loss/detection_loss.h"
#include "plugins/detect/metrics/metrics_report.h"
#include "plugins/detect/task/batch_tensors.h"
#include "plugins/detect/task/detect_schema.h"
#include "plugins/detect/task/detection_validator.h"
#include "plugins/detect/task/model_source.h"

namespace crucible::detect {
namespace {

// What a training batch carries through the engine.
struct DetectBatch {
    torch::Tensor images;
    DetectionTargets targets;
};

class DetectSource : public engine::BatchSource {
  public:
    DetectSource(std::unique_ptr<data::BatchLoader> loader, int batch, torch::Device device,
                 std::function<void(const data::BadSample&)> report_bad)
        : loader_(std::move(loader)),
          batch_(batch),
          device_(device),
          report_bad_(std::move(report_bad)) {}
    std::int64_t batches_per_epoch() const override { return loader_->batches_in_epoch(0); }
    std::int64_t items_per_epoch() const override { return loader_->sample_count(); }
    void start_epoch(int epoch, std::int64_t index) override {
        loader_->start_epoch(
            {epoch, std::min<std::int64_t>(index * batch_, loader_->sample_count())});
    }
    std::optional<engine::Batch> next() override {
        while (auto b = loader_->next()) {
            if (b->size == 0) {  // every image of the batch was unreadable: counted, skipped
                loader_->recycle(std::move(*b));
                continue;
            }
            engine::Batch out;
            out.size = b->size;
            out.data = DetectBatch{batch_images(*b, device_), batch_targets(*b, device_)};
            loader_->recycle(std::move(*b));
            // Unreadable images are reported here, on the engine's thread.
            for (const auto& bad : loader_->take_bad_samples())
                report_bad_(bad);
            return out;
        }
        return std::nullopt;
    }

  private:
    std::unique_ptr<data::BatchLoader> loader_;
    int batch_;
    torch::Device device_;
    std::function<void(const data::BadSample&)> report_bad_;
};

class DetectTask : public engine::Task {
  public:
    OptionSchema schema() const override { return detect_task_schema(); }

    void setup(const engine::TaskContext& c) override {
        ctx_ = c;
        const Json& cfg = c.config;
        imgsz_ = static_cast<int>(cfg["imgsz"].get<long long>());
        if (imgsz_ % 32 != 0)
            throw InputError(
                "imgsz", std::to_string(imgsz_) + " is not a multiple of 32 (the largest stride)");
        batch_ = static_cast<int>(cfg["batch"].get<long long>());
        epochs_ = static_cast<int>(cfg["epochs"].get<long long>());
        close_mosaic_ = static_cast<int>(cfg["close_mosaic"].get<long long>());

        const std::string data_path = cfg["data"].get<std::string>();
        data::LoadOptions lo;
        lo.read_image_sizes = true;
        lo.image_limits.max_pixels = static_cast<std::uint64_t>(cfg["max_pixels"].get<long long>());
        auto loaded =
            data::load_detection_dataset(path_from_utf8(data_path), data::DatasetFormat::Auto, lo);
        int problems = 0;
        for (const auto& p : loaded.problems)
            if (p.error && ++problems <= 20) c.log("warning", p.where + ": " + p.what);
        if (problems > 0)
            c.log("warning", std::to_string(problems) + " dataset problems; " +
                                 std::to_string(loaded.dropped_images) +
                                 " images left out (run `crucible dataset validate " + data_path +
                                 "` for the full report)");
        dataset_ = std::move(loaded.dataset);
        names_ = dataset_.class_names;
        if (names_.empty()) throw InputError("data", data_path + ": the dataset names no classes");
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
                                       static_cast<std::int64_t>(names_.size()));
        c.log("info", loaded_.description);
        if (!loaded_.names.empty() && !loaded_.new_head && loaded_.names != names_)
            c.log("warning",
                  "the model's class names differ from the dataset's; the dataset's "
                  "names are used");
        if (c.device.is_cpu()) loaded_.model->set_memory_format(torch::MemoryFormat::ChannelsLast);

        const int threads = std::max(1, c.workers);
        int loader_threads = static_cast<int>(cfg["loader_threads"].get<long long>());
        if (loader_threads == 0) {
            const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            loader_threads =
                c.device.is_cuda() ? std::clamp(cores - 1, 2, 16) : std::max(1, threads / 4);
        }
        loader_threads_ = loader_threads;

        data::AugmentOptions ao;
        ao.imgsz = imgsz_;
        ao.mosaic = cfg["mosaic"].get<double>();
        ao.degrees = cfg["degrees"].get<double>();
        ao.translate = cfg["translate"].get<double>();
        ao.scale = cfg["scale"].get<double>();
        ao.shear = cfg["shear"].get<double>();
        ao.perspective = cfg["perspective"].get<double>();
        ao.hsv_h = cfg["hsv_h"].get<double>();
        ao.hsv_s = cfg["hsv_s"].get<double>();
        ao.hsv_v = cfg["hsv_v"].get<double>();
        ao.fliplr = cfg["fliplr"].get<double>();
        ao.flipud = cfg["flipud"].get<double>();
        ao.close_mosaic = close_mosaic_;
        data::validate_augment_options(ao);
        augment_ = ao;

        ValidatorOptions vo;
        vo.imgsz = imgsz_;
        const int val_batch = static_cast<int>(cfg["val_batch"].get<long long>());
        vo.batch = val_batch > 0 ? val_batch : 2 * batch_;
        vo.workers = loader_threads_;
        vo.cache = cfg["cache"].get<bool>();
        vo.seed = static_cast<std::uint64_t>(c.seed);
        vo.nms.conf_threshold = cfg["conf"].get<double>();
        vo.nms.iou_threshold = cfg["iou"].get<double>();
        vo.nms.max_det = static_cast<int>(cfg["max_det"].get<long long>());
        validator_ = std::make_unique<DetectionValidator>(dataset_, val_split_, vo);

        loss_ = std::make_unique<DetectionLoss>(
            DetectionLossOptions(static_cast<std::int64_t>(names_.size()))
                .strides(loaded_.model->strides())
                .box_gain(cfg["box"].get<double>())
                .cls_gain(cfg["cls"].get<double>())
                .dfl_gain(cfg["dfl"].get<double>()));
        c.log("info", "data: " + std::to_string(train_count) + " train / " +
                          std::to_string(validator_->image_count()) + " val images, " +
                          std::to_string(names_.size()) + " classes, imgsz " +
                          std::to_string(imgsz_) + ", " + std::to_string(loader_threads_) +
                          " loader threads");
    }

    std::unique_ptr<engine::BatchSource> train_data() override {
        data::LoaderOptions lo;
        lo.batch_size = batch_;
        lo.workers = loader_threads_;
        lo.prefetch = std::max(2, loader_threads_ + 1);
        lo.augment = true;
        lo.shuffle = true;
        lo.cache = ctx_.config["cache"].get<bool>();
        lo.epochs = epochs_;
        lo.seed = static_cast<std::uint64_t>(ctx_.seed);
        lo.augment_options = augment_;
        lo.limits.max_pixels =
            static_cast<std::uint64_t>(ctx_.config["max_pixels"].get<long long>());
        auto loader =
            std::make_unique<data::BatchLoader>(data::loader_samples(dataset_, "train"), lo);
        return std::make_unique<DetectSource>(std::move(loader), batch_, ctx_.device,
                                              [this](const data::BadSample& bad) { log_bad(bad); });
    }

    std::shared_ptr<torch::nn::Module> build_model() override {
        // A fresh module holding the loaded (or freshly initialised) weights: the engine calls
        // this for the model and for its EMA copy, and both must start equal.
        auto model = DetectionModel(
            DetectionModelOptions(loaded_.scale, static_cast<std::int64_t>(names_.size())));
        {
            torch::NoGradGuard no_grad;
            auto src_params = loaded_.model->named_parameters(true);
            for (auto& p : model->named_parameters(true))
                p.value().copy_(src_params[p.key()]);
            auto src_buffers = loaded_.model->named_buffers(true);
            for (auto& b : model->named_buffers(true))
                b.value().copy_(src_buffers[b.key()]);
        }
        if (ctx_.device.is_cpu()) model->set_memory_format(torch::MemoryFormat::ChannelsLast);
        model->to(ctx_.device);
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
        return {result.total, result.items};
    }

    std::vector<std::string> eval_columns() const override {
        return {"metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
                "metrics/mAP50-95(B)",  "val/box_loss",      "val/cls_loss",
                "val/dfl_loss"};
    }

    engine::EvalResult validate(torch::nn::Module& model) override {
        auto& yolo = dynamic_cast<DetectionModelImpl&>(model);
        const ValidationResult r = validator_->run(yolo);
        for (const auto& bad : r.bad)
            log_bad(bad);
        const DetectionMetrics& m = r.metrics;
        engine::EvalResult out;
        out.values = {{"metrics/precision(B)", m.precision}, {"metrics/recall(B)", m.recall},
                      {"metrics/mAP50(B)", m.map50},         {"metrics/mAP50-95(B)", m.map50_95},
                      {"val/box_loss", r.losses[0]},         {"val/cls_loss", r.losses[1]},
                      {"val/dfl_loss", r.losses[2]}};
        out.per_class = per_class_json(m, names_);
        out.fitness = m.fitness;
        char line[160];
        std::snprintf(line, sizeof line,
                      "val: %d images, %d instances  P %.3f  R %.3f  mAP50 %.3f  mAP50-95 %.3f  "
                      "(%.1fs)",
                      m.images, m.instances, m.precision, m.recall, m.map50, m.map50_95, r.seconds);
        ctx_.log("info", line);
        return out;
    }

    int num_classes() const override { return static_cast<int>(names_.size()); }

    void on_epoch_start(int epoch, int epochs) override {
        if (close_mosaic_ > 0 && augment_.mosaic > 0 && epoch == epochs - close_mosaic_)
            ctx_.log("info",
                     "closing mosaic for the last " + std::to_string(close_mosaic_) + " epochs");
    }

    Json weights_metadata() const override {
        Json out = Json::object();
        for (const auto& [k, v] : detection_weights_metadata(
                 loaded_.scale, static_cast<std::int64_t>(names_.size()), names_))
            out[k] = v;
        return out;
    }

    std::string dataset_hash() const override { return dataset_hash_; }

    void save_artifacts(torch::nn::Module& best_model, const std::filesystem::path& dir) override {
        auto& yolo = dynamic_cast<DetectionModelImpl&>(best_model);
        const ValidationResult r = validator_->run(yolo);
        Json out = metrics_json(r.metrics, names_);
        out["confusion_matrix"] = confusion_matrix_json(r.confusion, names_);
        out["pr_curve"] = pr_curve_json(r.metrics, names_);
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        write_json_file(dir / "val_metrics.json", out);
        ctx_.log("info",
                 "best weights on " + val_split_ + ":\n" + results_table(r.metrics, names_, true));
    }

  private:
    void log_bad(const data::BadSample& bad) {
        ctx_.log("warning", "skipped " + path_to_utf8(bad.path) + ": " + bad.message);
    }

    engine::TaskContext ctx_;
    data::DetectionDataset dataset_;
    std::vector<std::string> names_;
    std::string dataset_hash_, val_split_;
    int imgsz_ = 640, batch_ = 16, epochs_ = 100, close_mosaic_ = 10, loader_threads_ = 1;
    data::AugmentOptions augment_;
    LoadedDetectionModel loaded_;
    std::unique_ptr<DetectionValidator> validator_;
    std::unique_ptr<DetectionLoss> loss_;
};

engine::RegisterTask registration(
    {kDetectTaskId, "YOLOv8 object detection", {"detect"}, "detect", [] {
         return std::make_unique<DetectTask>();
     }});

}  // namespace

void ensure_detect_task_registered() {
    (void)&registration;
}

}  // namespace crucible::detect
