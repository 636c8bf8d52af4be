#include "plugins/detect/task/predictor.h"

#include <algorithm>
#include <cstdio>

#include <opencv2/core.hpp>

#include "core/base/error.h"
#include "core/data/augment/augment.h"
#include "core/data/draw_boxes.h"
#include "core/data/loader/batch_loader.h"
#include "core/engine/autocast.h"
#include "plugins/detect/metrics/metrics_report.h"
#include "plugins/detect/task/batch_tensors.h"

namespace crucible::detect {

std::vector<Detection> predict_image(DetectionModelImpl& model, const cv::Mat& bgr,
                                     const PredictOptions& options) {
    const torch::Device device = model.parameters().front().device();
    const auto detector = [&](const torch::Tensor& x) {
        torch::NoGradGuard no_grad;
        DetectionOutput out;
        {
            engine::AutocastGuard autocast(engine::AutocastMode::cuda_fp16(device.is_cuda()));
            out = model.forward(x);
        }
        return non_max_suppression(out.decoded.to(torch::kFloat32), options.nms);
    };
    return predict_image(detector, device, bgr, options);
}

std::vector<Detection> predict_image(const DetectionsForward& detector, const torch::Device& device,
                                     const cv::Mat& bgr, const PredictOptions& options) {
    if (bgr.empty() || bgr.type() != CV_8UC3) throw Error("predict: expects an 8-bit BGR image");
    if (options.imgsz <= 0 || options.imgsz % 32 != 0)
        throw InputError("imgsz", std::to_string(options.imgsz) + " is not a multiple of 32");
    data::LetterboxInfo info;
    const data::LabeledImage boxed =
        data::letterbox(data::LabeledImage{bgr, {}}, options.imgsz, options.imgsz, 114,
                        /*scaleup=*/true, &info);
    // The same bytes-to-tensor path as training and validation batches.
    data::Batch batch;
    batch.size = 1;
    batch.imgsz = options.imgsz;
    batch.pixels.resize(3 * static_cast<std::size_t>(options.imgsz) * options.imgsz);
    data::write_rgb_planes(boxed.image, batch.pixels.data());
    const auto kept = detector(batch_images(batch, device)).at(0);
    std::vector<Detection> result;
    const auto rows = kept.to(torch::kCPU, torch::kFloat32).contiguous();
    const float* p = rows.data_ptr<float>();
    const float w = static_cast<float>(bgr.cols), h = static_cast<float>(bgr.rows);
    const float scale = static_cast<float>(info.scale);
    for (std::int64_t i = 0; i < rows.size(0); ++i, p += 6) {
        Detection d;
        d.x1 = std::clamp((p[0] - static_cast<float>(info.pad_left)) / scale, 0.f, w);
        d.y1 = std::clamp((p[1] - static_cast<float>(info.pad_top)) / scale, 0.f, h);
        d.x2 = std::clamp((p[2] - static_cast<float>(info.pad_left)) / scale, 0.f, w);
        d.y2 = std::clamp((p[3] - static_cast<float>(info.pad_top)) / scale, 0.f, h);
        d.conf = p[4];
        d.cls = static_cast<int>(p[5]);
        result.push_back(d);
    }
    return result;
}

void draw_detections(cv::Mat& image, const std::vector<Detection>& detections,
                     const std::vector<std::string>& class_names) {
    for (const auto& d : detections) {
        char conf[16];
        std::snprintf(conf, sizeof conf, " %.2f", d.conf);
        data::draw_labeled_box(image, {d.cls, d.x1, d.y1, d.x2, d.y2},
                               class_display_name(class_names, d.cls) + conf);
    }
}

}  // namespace crucible::detect
