#include "plugins/detect/model/yolo_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/base/error.h"

namespace crucible::detect {

YoloScale yolo_scale(char name) {
    switch (std::tolower(static_cast<unsigned char>(name))) {
        case 'n':
            return YoloScale{'n', 0.33, 0.25, 1024};
        case 's':
            return YoloScale{'s', 0.33, 0.50, 1024};
        case 'm':
            return YoloScale{'m', 0.67, 0.75, 768};
        case 'l':
            return YoloScale{'l', 1.00, 1.00, 512};
        case 'x':
            return YoloScale{'x', 1.00, 1.25, 512};
        default:
            break;
    }
    throw InputError("model", std::string("unknown YOLOv8 scale '") + name +
                                  "' (expected one of n, s, m, l, x)");
}

YoloScale yolo_scale_from_model_name(const std::string& model_name) {
    std::string s;
    for (char c : model_name)
        s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (s.size() > 5 && s.substr(s.size() - 5) == ".yaml") s.resize(s.size() - 5);
    if (s.size() > 4 && s.substr(s.size() - 4) == ".yml") s.resize(s.size() - 4);
    if (s.rfind("yolov8", 0) == 0) s = s.substr(6);
    if (s.size() == 1 && std::string("nsmlx").find(s[0]) != std::string::npos) {
        return yolo_scale(s[0]);
    }
    throw InputError("model", "unknown model '" + model_name +
                                  "' (expected yolov8n, yolov8s, yolov8m, yolov8l or yolov8x)");
}

int64_t scaled_channels(int64_t base_channels, const YoloScale& scale) {
    const double c = static_cast<double>(std::min(base_channels, scale.max_channels)) * scale.width;
    return static_cast<int64_t>(std::ceil(c / 8.0)) * 8;
}

int64_t scaled_repeats(int64_t base_repeats, const YoloScale& scale) {
    if (base_repeats <= 1) return base_repeats;
    return std::max<int64_t>(std::llround(static_cast<double>(base_repeats) * scale.depth), 1);
}

DetectionModelImpl::DetectionModelImpl(const DetectionModelOptions& opts) : options(opts) {
    if (opts.num_classes() < 1) {
        throw InputError("nc", "number of classes must be at least 1, got " +
                                   std::to_string(opts.num_classes()));
    }
    const YoloScale& sc = opts.scale();
    auto ch = [&](int64_t c) { return scaled_channels(c, sc); };
    auto rep = [&](int64_t n) { return scaled_repeats(n, sc); };

    const int64_t c64 = ch(64), c128 = ch(128), c256 = ch(256), c512 = ch(512), c1024 = ch(1024);

    b0 = Conv(ConvOptions(opts.in_channels(), c64, 3, 2));
    b1 = Conv(ConvOptions(c64, c128, 3, 2));
    b2 = C2f(C2fOptions(c128, c128, rep(3), true));
    b3 = Conv(ConvOptions(c128, c256, 3, 2));
    b4 = C2f(C2fOptions(c256, c256, rep(6), true));
    b5 = Conv(ConvOptions(c256, c512, 3, 2));
    b6 = C2f(C2fOptions(c512, c512, rep(6), true));
    b7 = Conv(ConvOptions(c512, c1024, 3, 2));
    b8 = C2f(C2fOptions(c1024, c1024, rep(3), true));
    b9 = SPPF(SPPFOptions(c1024, c1024, 5));
    up10 = Upsample(2);
    cat11 = Concat();
    h12 = C2f(C2fOptions(c1024 + c512, c512, rep(3), false));
    up13 = Upsample(2);
    cat14 = Concat();
    h15 = C2f(C2fOptions(c512 + c256, c256, rep(3), false));  // P3/8
    h16 = Conv(ConvOptions(c256, c256, 3, 2));
    cat17 = Concat();
    h18 = C2f(C2fOptions(c256 + c512, c512, rep(3), false));  // P4/16
    h19 = Conv(ConvOptions(c512, c512, 3, 2));
    cat20 = Concat();
    h21 = C2f(C2fOptions(c512 + c1024, c1024, rep(3), false));  // P5/32
    head = Detect(DetectOptions(opts.num_classes(), {c256, c512, c1024}));

    model = register_module("model", torch::nn::ModuleList());
    model->push_back(b0);
    model->push_back(b1);
    model->push_back(b2);
    model->push_back(b3);
    model->push_back(b4);
    model->push_back(b5);
    model->push_back(b6);
    model->push_back(b7);
    model->push_back(b8);
    model->push_back(b9);
    model->push_back(up10);
    model->push_back(cat11);
    model->push_back(h12);
    model->push_back(up13);
    model->push_back(cat14);
    model->push_back(h15);
    model->push_back(h16);
    model->push_back(cat17);
    model->push_back(h18);
    model->push_back(h19);
    model->push_back(cat20);
    model->push_back(h21);
    model->push_back(head);
}

std::vector<torch::Tensor> DetectionModelImpl::forward_levels(const torch::Tensor& images) {
    if (images.dim() != 4 || images.size(1) != options.in_channels()) {
        throw Error("DetectionModel: expected images [B, " + std::to_string(options.in_channels()) +
                    ", H, W], got " + std::to_string(images.dim()) + "-D input");
    }
    if (images.size(2) % 32 != 0 || images.size(3) % 32 != 0) {
        throw Error("DetectionModel: image height and width must be multiples of 32, got " +
                    std::to_string(images.size(2)) + "x" + std::to_string(images.size(3)));
    }
    auto x = b1->forward(b0->forward(images));
    x = b2->forward(x);
    x = b3->forward(x);
    auto x4 = b4->forward(x);  // layer 4 (stride 8)
    x = b5->forward(x4);
    auto x6 = b6->forward(x);  // layer 6 (stride 16)
    x = b7->forward(x6);
    x = b8->forward(x);
    auto sppf = b9->forward(x);  // layer 9

    auto h12_out = h12->forward(cat11->forward({up10->forward(sppf), x6}));
    auto p3 = h15->forward(cat14->forward({up13->forward(h12_out), x4}));
    auto p4 = h18->forward(cat17->forward({h16->forward(p3), h12_out}));
    auto p5 = h21->forward(cat20->forward({h19->forward(p4), sppf}));
    return head->forward({p3, p4, p5});
}

torch::Tensor DetectionModelImpl::decode(const std::vector<torch::Tensor>& levels) {
    return head->decode(levels);
}

DetectionOutput DetectionModelImpl::forward(const torch::Tensor& images) {
    DetectionOutput out;
    out.levels = forward_levels(images);
    if (!is_training()) out.decoded = head->decode(out.levels);
    return out;
}

void DetectionModelImpl::set_memory_format(torch::MemoryFormat format) {
    torch::NoGradGuard no_grad;
    for (auto& p : parameters()) {
        if (p.dim() == 4) p.set_data(p.contiguous(format));
    }
}

int64_t count_parameters(torch::nn::Module& module) {
    int64_t n = 0;
    for (const auto& p : module.parameters())
        n += p.numel();
    return n;
}

}  // namespace crucible::detect
