#pragma once
// The YOLOv8 detection model (SPECS.md "YOLOv8 detector") for the scales n/s/m/l/x.
//
// Submodules are registered as `model.<i>` with the reference layer numbering (0..22, including
// the parameter-free Upsample/Concat layers), so that `named_parameters()` + `named_buffers()`
// equal the reference state dict name for name and shape for shape (fixtures/yolov8/*.json).
//
//   auto model = DetectionModel(DetectionModelOptions(yolo_scale("n"), 4));
//   model->train();  auto out = model->forward(images);  // out.levels: 3 raw maps
//   model->eval();   auto out = model->forward(images);  // out.decoded: [B, 4 + nc, A]
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/detect/model/yolo_blocks.h"
#include "plugins/detect/model/yolo_head.h"

namespace crucible::detect {

struct YoloScale {
    char name = 'n';
    double depth = 0.33;
    double width = 0.25;
    int64_t max_channels = 1024;
};

// 'n', 's', 'm', 'l' or 'x'; throws InputError("model", ...) otherwise.
YoloScale yolo_scale(char name);
// "yolov8n", "yolov8n.yaml", "YOLOv8s", "n" ... -> scale; throws InputError("model", ...).
YoloScale yolo_scale_from_model_name(const std::string& model_name);

// Channels after scaling: ceil(min(c, max_channels) * width / 8) * 8.
int64_t scaled_channels(int64_t base_channels, const YoloScale& scale);
// Repeats after scaling: max(round(n * depth), 1) for n > 1, else n.
int64_t scaled_repeats(int64_t base_repeats, const YoloScale& scale);

struct DetectionModelOptions {
    DetectionModelOptions(YoloScale scale, int64_t num_classes)
        : scale_(scale), num_classes_(num_classes) {}
    TORCH_ARG(YoloScale, scale);
    TORCH_ARG(int64_t, num_classes) = 80;
    TORCH_ARG(int64_t, in_channels) = 3;
};

struct DetectionOutput {
    std::vector<torch::Tensor> levels;  // raw [B, 4*reg_max + nc, H_i, W_i], strides 8/16/32
    torch::Tensor decoded;              // eval mode only: [B, 4 + nc, A]; undefined in train mode
};

class DetectionModelImpl : public torch::nn::Module {
  public:
    explicit DetectionModelImpl(const DetectionModelOptions& options);

    // Train mode: `levels` only. Eval mode: `levels` and `decoded`.
    DetectionOutput forward(const torch::Tensor& images);
    // The three raw level maps, in either mode.
    std::vector<torch::Tensor> forward_levels(const torch::Tensor& images);
    // Level maps -> [B, 4 + nc, A] (cx, cy, w, h in input pixels, sigmoid class scores).
    torch::Tensor decode(const std::vector<torch::Tensor>& levels);

    // Re-lays out every 4-D parameter in `format` (ChannelsLast makes oneDNN convolutions on CPU
    // much faster; feed channels-last images too). Values do not change.
    void set_memory_format(torch::MemoryFormat format);

    int64_t num_classes() const { return options.num_classes(); }
    int64_t reg_max() const { return head->options.reg_max(); }
    const std::vector<double>& strides() const { return head->options.strides(); }

    DetectionModelOptions options;
    torch::nn::ModuleList model{nullptr};

    // Typed views of the layers in `model`.
    Conv b0{nullptr}, b1{nullptr}, b3{nullptr}, b5{nullptr}, b7{nullptr};
    C2f b2{nullptr}, b4{nullptr}, b6{nullptr}, b8{nullptr};
    SPPF b9{nullptr};
    Upsample up10{nullptr}, up13{nullptr};
    Concat cat11{nullptr}, cat14{nullptr}, cat17{nullptr}, cat20{nullptr};
    C2f h12{nullptr}, h15{nullptr}, h18{nullptr}, h21{nullptr};
    Conv h16{nullptr}, h19{nullptr};
    Detect head{nullptr};
};
TORCH_MODULE(DetectionModel);

// Number of parameters (trainable or not, as the reference counts them).
int64_t count_parameters(torch::nn::Module& module);

}  // namespace crucible::detect
