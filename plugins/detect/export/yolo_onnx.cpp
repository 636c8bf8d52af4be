#include "plugins/detect/export/yolo_onnx.h"

#include <torch/torch.h>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/engine/onnx_torch.h"
#include "plugins/detect/model/yolo_head.h"

namespace crucible::detect {

namespace {

using onnx::Attribute;

std::vector<std::int64_t> pair(std::int64_t v) {
    return {v, v};
}

// Appends nodes and constants to one graph. Every node's single output is named after the node
// (`Conv_12`), every weight after its module path (`model.2.cv1.conv.weight`).
class GraphBuilder {
  public:
    explicit GraphBuilder(bool half)
        : float_type_(half ? onnx::DataType::Float16 : onnx::DataType::Float) {}

    onnx::DataType float_type() const { return float_type_; }

    std::string node(const std::string& op, std::vector<std::string> inputs,
                     std::vector<Attribute> attributes = {}) {
        std::string out = op + "_" + std::to_string(count_++);
        graph.nodes.push_back({op, std::move(inputs), {out}, out, std::move(attributes)});
        return out;
    }
    std::string weight(const std::string& name, const torch::Tensor& values) {
        graph.initializers.push_back(engine::onnx_tensor_from(name, values, float_type_));
        return name;
    }
    std::string ints(const std::vector<std::int64_t>& values,
                     std::vector<std::int64_t> dims = {-1}) {
        std::string name = "const_" + std::to_string(count_++);
        graph.initializers.push_back(onnx::int64_tensor(name, values, std::move(dims)));
        return name;
    }
    // Constants in the model's float type (fp16 in a half export).
    std::string floats(const std::vector<float>& values, std::vector<std::int64_t> dims = {-1}) {
        std::string name = "const_" + std::to_string(count_++);
        graph.initializers.push_back(float_type_ == onnx::DataType::Float16
                                         ? onnx::half_tensor(name, values, std::move(dims))
                                         : onnx::float_tensor(name, values, std::move(dims)));
        return name;
    }
    // Constants that ONNX wants in fp32 whatever the model's type (Resize's scales and roi).
    std::string fp32(const std::vector<float>& values, std::vector<std::int64_t> dims = {-1}) {
        std::string name = "const_" + std::to_string(count_++);
        graph.initializers.push_back(onnx::float_tensor(name, values, std::move(dims)));
        return name;
    }
    std::string slice(const std::string& x, std::int64_t begin, std::int64_t end,
                      std::int64_t axis) {
        return node("Slice", {x, ints({begin}), ints({end}), ints({axis})});
    }
    std::string reshape(const std::string& x, const std::vector<std::int64_t>& shape) {
        return node("Reshape", {x, ints(shape)});
    }
    std::string concat(std::vector<std::string> inputs, std::int64_t axis) {
        return node("Concat", std::move(inputs), {{"axis", axis}});
    }
    std::string conv(const std::string& x, const std::string& w, const std::string& b,
                     std::int64_t kernel, std::int64_t stride) {
        std::vector<std::string> in = {x, w};
        if (!b.empty()) in.push_back(b);
        const std::int64_t pad = kernel / 2;
        return node("Conv", std::move(in),
                    {{"kernel_shape", pair(kernel)},
                     {"strides", pair(stride)},
                     {"pads", std::vector<std::int64_t>{pad, pad, pad, pad}},
                     {"dilations", pair(1)},
                     {"group", std::int64_t{1}}});
    }

    onnx::Graph graph;

  private:
    onnx::DataType float_type_;
    int count_ = 0;
};

// Conv + BatchNorm (folded into the convolution's weight and bias, in float64) + SiLU.
std::string conv_block(GraphBuilder& g, ConvImpl& block, const std::string& x,
                       const std::string& path) {
    torch::NoGradGuard no_grad;
    auto& bn = *block.bn;
    const auto scale = bn.weight.to(torch::kDouble) /
                       torch::sqrt(bn.running_var.to(torch::kDouble) + bn.options.eps());
    const auto w = block.conv->weight.to(torch::kDouble) * scale.view({-1, 1, 1, 1});
    const auto b = bn.bias.to(torch::kDouble) - bn.running_mean.to(torch::kDouble) * scale;
    const auto y = g.conv(x, g.weight(path + ".conv.weight", w), g.weight(path + ".conv.bias", b),
                          block.options.kernel(), block.options.stride());
    return g.node("Mul", {y, g.node("Sigmoid", {y})});
}

std::string plain_conv(GraphBuilder& g, torch::nn::Conv2dImpl& conv, const std::string& x,
                       const std::string& path) {
    const auto kernel = (*conv.options.kernel_size())[0];
    return g.conv(x, g.weight(path + ".weight", conv.weight),
                  conv.bias.defined() ? g.weight(path + ".bias", conv.bias) : std::string(), kernel,
                  (*conv.options.stride())[0]);
}

std::string c2f(GraphBuilder& g, C2fImpl& block, const std::string& x, const std::string& path) {
    const auto y = conv_block(g, *block.cv1, x, path + ".cv1");
    std::vector<std::string> parts = {g.slice(y, 0, block.hidden, 1),
                                      g.slice(y, block.hidden, 2 * block.hidden, 1)};
    for (std::size_t i = 0; i < block.blocks.size(); ++i) {
        auto& b = *block.blocks[i];
        const std::string p = path + ".m." + std::to_string(i);
        const auto inner =
            conv_block(g, *b.cv2, conv_block(g, *b.cv1, parts.back(), p + ".cv1"), p + ".cv2");
        parts.push_back(b.options.shortcut() ? g.node("Add", {parts.back(), inner}) : inner);
    }
    return conv_block(g, *block.cv2, g.concat(parts, 1), path + ".cv2");
}

std::string sppf(GraphBuilder& g, SPPFImpl& block, const std::string& x, const std::string& path) {
    const std::int64_t k = block.options.kernel();
    const std::vector<Attribute> pool = {
        {"kernel_shape", pair(k)},
        {"strides", pair(1)},
        {"pads", std::vector<std::int64_t>{k / 2, k / 2, k / 2, k / 2}}};
    std::vector<std::string> parts = {conv_block(g, *block.cv1, x, path + ".cv1")};
    for (int i = 0; i < 3; ++i)
        parts.push_back(g.node("MaxPool", {parts.back()}, pool));
    return conv_block(g, *block.cv2, g.concat(parts, 1), path + ".cv2");
}

// Nearest-neighbour upsampling as LibTorch's `nearest` does it: source = floor(dest / factor).
std::string upsample(GraphBuilder& g, const UpsampleImpl& block, const std::string& x) {
    const auto f = static_cast<float>(block.factor);
    return g.node("Resize", {x, g.fp32({}, {0}), g.fp32({1, 1, f, f})},
                  {{"mode", std::string("nearest")},
                   {"coordinate_transformation_mode", std::string("asymmetric")},
                   {"nearest_mode", std::string("floor")}});
}

// The decoding of distances into boxes is linear: boxes = distances' * scale + offset, where
// distances' = ((r - l) / 2, (b - t) / 2, l + r, t + b) in grid units, scale = the anchor's stride
// on all four rows and offset = (x * stride, y * stride, 0, 0) for the anchor point (x, y). Both
// are [1, 4, A] tensors of the input's shape, not [1, 1, A] or [1, 2, A] broadcast over rows:
// OpenCV DNN 4.6 (Debian 12's) broadcasts a constant factor only over the batch.
struct AnchorTerms {
    std::string scale;
    std::string offset;
};

// For a fixed input size: constants.
AnchorTerms fixed_anchors(GraphBuilder& g, const DetectImpl& head, const YoloOnnxOptions& o) {
    std::vector<torch::Tensor> shapes;
    for (double s : head.options.strides()) {
        const auto stride = static_cast<std::int64_t>(s);
        shapes.push_back(torch::zeros({1, 1, o.height / stride, o.width / stride}));
    }
    const auto anchors = make_anchors(shapes, head.options.strides());
    const auto points = anchors.points.transpose(0, 1);    // [2, A]
    const auto strides = anchors.strides.transpose(0, 1);  // [1, A]
    const std::int64_t a = points.size(1);
    const auto to_vector = [](const torch::Tensor& t) {
        const auto c = t.contiguous();
        return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    };
    return {g.floats(to_vector(strides.expand({4, a})), {1, 4, a}),
            g.floats(to_vector(torch::cat({points * strides, torch::zeros({2, a})})), {1, 4, a})};
}

// The same, computed in the graph from each level map's height and width (dynamic=true).
AnchorTerms computed_anchors(GraphBuilder& g, const DetectImpl& head,
                             const std::vector<std::string>& levels) {
    const auto cast = [&g](const std::string& x) {
        return g.node("Cast", {x}, {{"to", static_cast<std::int64_t>(g.float_type())}});
    };
    std::vector<std::string> points, strides;
    for (std::size_t i = 0; i < levels.size(); ++i) {
        const auto shape = g.node("Shape", {levels[i]});
        const auto hw = g.slice(shape, 2, 4, 0);  // [H, W]
        const auto zero = g.ints({0}, {}), one = g.ints({1}, {});
        const auto half = g.floats({0.5f}, {});
        const auto h = g.node("Gather", {shape, g.ints({2}, {})});
        const auto w = g.node("Gather", {shape, g.ints({3}, {})});
        const auto xs = g.node("Add", {cast(g.node("Range", {zero, w, one})), half});
        const auto ys = g.node("Add", {cast(g.node("Range", {zero, h, one})), half});
        const auto xx = g.node("Expand", {g.reshape(xs, {1, -1}), hw});
        const auto yy = g.node("Expand", {g.reshape(ys, {-1, 1}), hw});
        const auto px = g.reshape(xx, {1, -1});
        points.push_back(g.concat({px, g.reshape(yy, {1, -1})}, 0));  // [2, H*W]
        const auto stride = static_cast<float>(head.options.strides()[i]);
        strides.push_back(g.node("Expand", {g.floats({stride}, {1, 1}), g.node("Shape", {px})}));
    }
    const auto p = g.reshape(g.concat(points, 1), {1, 2, -1});
    const auto s = g.reshape(g.concat(strides, 1), {1, 1, -1});
    return {g.concat({s, s, s, s}, 1), g.concat({g.node("Mul", {p, s}), g.node("Sub", {p, p})}, 1)};
}

std::string detect_head(GraphBuilder& g, DetectImpl& head, const std::vector<std::string>& features,
                        const YoloOnnxOptions& o) {
    const std::int64_t reg_max = head.options.reg_max();
    const std::int64_t nc = head.options.num_classes();
    const std::int64_t no = head.outputs_per_anchor();
    const std::int64_t b = o.dynamic ? 0 : o.batch;  // 0: Reshape keeps the input's size
    std::vector<std::string> levels, flat;
    for (std::size_t i = 0; i < features.size(); ++i) {
        std::string box = features[i], cls = features[i];
        // Built by appending: GCC 12 warns falsely on "literal" + std::string here.
        std::string box_path = "model.22.cv2.", cls_path = "model.22.cv3.";
        box_path += std::to_string(i);
        cls_path += std::to_string(i);
        for (std::size_t j = 0; j < 2; ++j) {
            std::string k = ".";
            k += std::to_string(j);
            box = conv_block(g, *head.box_branches[i]->ptr<ConvImpl>(j), box, box_path + k);
            cls = conv_block(g, *head.class_branches[i]->ptr<ConvImpl>(j), cls, cls_path + k);
        }
        box = plain_conv(g, *head.box_branches[i]->ptr<torch::nn::Conv2dImpl>(2), box,
                         box_path + ".2");
        cls = plain_conv(g, *head.class_branches[i]->ptr<torch::nn::Conv2dImpl>(2), cls,
                         cls_path + ".2");
        levels.push_back(g.concat({box, cls}, 1));
        flat.push_back(g.reshape(levels.back(), {b, no, -1}));
    }
    const auto all = g.concat(flat, 2);  // [B, no, A]
    // DFL: softmax over each side's reg_max bins, then the expectation as a 1x1 convolution
    // whose weights are the bin values.
    const auto bins =
        g.node("Transpose", {g.reshape(g.slice(all, 0, 4 * reg_max, 1), {b, 4, reg_max, -1})},
               {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}});  // [B, reg_max, 4, A]
    const auto probs = g.node("Softmax", {bins}, {{"axis", std::int64_t{1}}});
    const auto distances = g.reshape(
        g.conv(probs, g.weight("model.22.dfl.conv.weight", head.dfl->conv->weight), "", 1, 1),
        {b, 4, -1});
    const auto anchors = o.dynamic ? computed_anchors(g, head, levels) : fixed_anchors(g, head, o);
    const auto lt = g.slice(distances, 0, 2, 1), rb = g.slice(distances, 2, 4, 1);
    const auto halves = g.node("Mul", {g.node("Sub", {rb, lt}), g.floats({0.5f}, {})});
    const auto grid = g.concat({halves, g.node("Add", {lt, rb})}, 1);
    // The offset is brought to the batch's shape by multiplying ones made from `grid` (0 * x + 1):
    // OpenCV DNN 4.6 adds a constant only to a tensor of the constant's own shape.
    const auto ones =
        g.node("Add", {g.node("Mul", {grid, g.floats({0.0f}, {})}), g.floats({1.0f}, {})});
    const auto offset = g.node("Mul", {ones, anchors.offset});
    const auto boxes = g.node("Add", {g.node("Mul", {grid, anchors.scale}), offset});
    const auto scores = g.node("Sigmoid", {g.slice(all, 4 * reg_max, 4 * reg_max + nc, 1)});
    return g.concat({boxes, scores}, 1);
}

// Non-maximum suppression in the graph (ONNX NonMaxSuppression: per class, as `crucible
// predict` suppresses): the raw output [B, 4 + nc, A] becomes one row per kept box, [K, 7] =
// batch index, x1, y1, x2, y2 (input pixels), score, class, always in fp32 (the operator's type).
std::string nms_rows(GraphBuilder& g, const std::string& raw, std::int64_t nc,
                     const YoloOnnxOptions& o) {
    const auto to_float = [&g](const std::string& x) {
        return g.node("Cast", {x}, {{"to", static_cast<std::int64_t>(onnx::DataType::Float)}});
    };
    const auto as_float = [&](const std::string& x) {
        return g.float_type() == onnx::DataType::Float ? x : to_float(x);
    };
    const auto boxes = g.node("Transpose", {as_float(g.slice(raw, 0, 4, 1))},
                              {{"perm", std::vector<std::int64_t>{0, 2, 1}}});  // [B, A, 4]
    const auto scores = as_float(g.slice(raw, 4, 4 + nc, 1));                   // [B, nc, A]
    const auto selected =
        g.node("NonMaxSuppression",
               {boxes, scores, g.ints({o.max_det}), g.fp32({static_cast<float>(o.nms_iou)}),
                g.fp32({static_cast<float>(o.nms_conf)})},
               {{"center_point_box", std::int64_t{1}}});  // [K, 3]: batch, class, box
    const auto batch = g.slice(selected, 0, 1, 1), cls = g.slice(selected, 1, 2, 1);
    const auto box_index = g.concat({batch, g.slice(selected, 2, 3, 1)}, 1);
    const auto cxcywh = g.node("GatherND", {boxes, box_index});  // [K, 4]
    const auto half_size = g.node("Mul", {g.slice(cxcywh, 2, 4, 1), g.fp32({0.5f}, {})});
    const auto centre = g.slice(cxcywh, 0, 2, 1);
    const auto score = g.node("Unsqueeze", {g.node("GatherND", {scores, selected}), g.ints({1})});
    return g.concat({to_float(batch), g.node("Sub", {centre, half_size}),
                     g.node("Add", {centre, half_size}), score, to_float(cls)},
                    1);
}

onnx::Dim dim(bool dynamic, std::int64_t value, const char* name) {
    return dynamic ? onnx::Dim{0, name} : onnx::Dim{value, ""};
}

}  // namespace

std::string python_names_literal(const std::vector<std::string>& class_names) {
    std::string out = "{";
    for (std::size_t i = 0; i < class_names.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(i) + ": '";
        for (char c : class_names[i]) {
            if (c == '\\' || c == '\'') out += '\\';
            out += c;
        }
        out += "'";
    }
    return out + "}";
}

onnx::Model yolo_onnx_model(DetectionModelImpl& model, const std::vector<std::string>& class_names,
                            const YoloOnnxOptions& o) {
    if (o.opset < kMinYoloOpset)
        throw InputError("opset", "is " + std::to_string(o.opset) + "; the detector needs " +
                                      std::to_string(kMinYoloOpset) + " or later");
    if (!o.dynamic && (o.height % 32 != 0 || o.width % 32 != 0 || o.height <= 0 || o.width <= 0))
        throw InputError("imgsz", "must be a positive multiple of 32, not " +
                                      std::to_string(o.height) + "x" + std::to_string(o.width));
    if (static_cast<std::int64_t>(class_names.size()) != model.num_classes())
        throw Error("ONNX export: " + std::to_string(class_names.size()) + " class names for " +
                    std::to_string(model.num_classes()) + " classes");
    torch::NoGradGuard no_grad;
    GraphBuilder g(o.half);
    const auto layer = [](int i) { return "model." + std::to_string(i); };
    const std::string images = "images";
    auto x = conv_block(g, *model.b0, images, layer(0));
    x = conv_block(g, *model.b1, x, layer(1));
    x = c2f(g, *model.b2, x, layer(2));
    x = conv_block(g, *model.b3, x, layer(3));
    const auto x4 = c2f(g, *model.b4, x, layer(4));
    x = conv_block(g, *model.b5, x4, layer(5));
    const auto x6 = c2f(g, *model.b6, x, layer(6));
    x = conv_block(g, *model.b7, x6, layer(7));
    x = c2f(g, *model.b8, x, layer(8));
    const auto x9 = sppf(g, *model.b9, x, layer(9));
    const auto h12 = c2f(g, *model.h12, g.concat({upsample(g, *model.up10, x9), x6}, 1), layer(12));
    const auto p3 = c2f(g, *model.h15, g.concat({upsample(g, *model.up13, h12), x4}, 1), layer(15));
    const auto p4 =
        c2f(g, *model.h18, g.concat({conv_block(g, *model.h16, p3, layer(16)), h12}, 1), layer(18));
    const auto p5 =
        c2f(g, *model.h21, g.concat({conv_block(g, *model.h19, p4, layer(19)), x9}, 1), layer(21));
    auto out = detect_head(g, *model.head, {p3, p4, p5}, o);
    if (o.nms) out = nms_rows(g, out, model.num_classes(), o);
    // The graph's output gets the reference's name.
    g.graph.nodes.push_back({"Identity", {out}, {"output0"}, "output0", {}});

    const auto type = g.float_type();
    std::int64_t anchors = 0;
    for (double s : model.strides())
        anchors +=
            (o.height / static_cast<std::int64_t>(s)) * (o.width / static_cast<std::int64_t>(s));
    g.graph.name = "crucible_yolov8" + std::string(1, model.options.scale().name);
    g.graph.inputs = {{images,
                       type,
                       {dim(o.dynamic, o.batch, "batch"),
                        {3, ""},
                        dim(o.dynamic, o.height, "height"),
                        dim(o.dynamic, o.width, "width")}}};
    g.graph.outputs = {{"output0",
                        type,
                        {dim(o.dynamic, o.batch, "batch"),
                         {4 + model.num_classes(), ""},
                         dim(o.dynamic, anchors, "anchors")}}};
    if (o.nms) g.graph.outputs = {{"output0", onnx::DataType::Float, {{0, "detections"}, {7, ""}}}};

    onnx::Model m;
    m.opset = o.opset;
    m.graph = std::move(g.graph);
    m.metadata = {{"description",
                   "Crucible YOLOv8" + std::string(1, model.options.scale().name) + " detector"},
                  {"author", "Crucible"},
                  {"task", "detect"},
                  {"stride", "32"},
                  {"batch", std::to_string(o.batch)},
                  {"imgsz", "[" + std::to_string(o.height) + ", " + std::to_string(o.width) + "]"},
                  {"half", o.half ? "True" : "False"},
                  {"dynamic", o.dynamic ? "True" : "False"},
                  {"nms", o.nms ? "True" : "False"},
                  {"names", python_names_literal(class_names)},
                  {"crucible_names", Json(class_names).dump()}};
    return m;
}

}  // namespace crucible::detect
