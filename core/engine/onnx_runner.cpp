#include "core/engine/onnx_runner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "core/base/error.h"
#include "core/engine/onnx_torch.h"

namespace crucible::engine {
namespace {

using Tensors = std::vector<torch::Tensor>;

constexpr std::int64_t i64(std::size_t v) {
    return static_cast<std::int64_t>(v);
}

// The most elements one computed shape may hold (8 GiB of fp32): a hostile file asking for more
// (a Range to 1e12, a Resize by 1e6) is refused by name instead of exhausting memory.
constexpr double kMaxElements = 2.0 * 1024 * 1024 * 1024;

// One node being run: its inputs (undefined for an omitted optional one), its attributes and
// how to word an error about it.
struct NodeCall {
    const onnx::Node& node;
    const Tensors& in;
    std::int64_t opset;
    const std::string& where;

    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(where, "node '" + node.name + "' (" + node.op_type + "): " + what);
    }
    const torch::Tensor& input(std::size_t i) const {
        if (i >= in.size() || !in[i].defined()) fail("input " + std::to_string(i) + " is missing");
        return in[i];
    }
    bool has_input(std::size_t i) const { return i < in.size() && in[i].defined(); }
    const onnx::Attribute* attribute(const std::string& name) const {
        for (const auto& a : node.attributes)
            if (a.name == name) return &a;
        return nullptr;
    }
    template <typename T>
    T get(const std::string& name, T fallback) const {
        const auto* a = attribute(name);
        if (!a) return fallback;
        if (const auto* v = std::get_if<T>(&a->value)) return *v;
        fail("attribute '" + name + "' has the wrong type");
    }
    // A small integer input (a shape, axes, a count) read on the CPU.
    std::vector<std::int64_t> ints(std::size_t i) const {
        const auto t = input(i).to(torch::kCPU, torch::kLong).contiguous();
        return {t.data_ptr<std::int64_t>(), t.data_ptr<std::int64_t>() + t.numel()};
    }
    // Refuses a result shape with a negative axis or more than kMaxElements elements.
    void check_size(const std::vector<std::int64_t>& shape) const {
        double elements = 1;
        for (auto d : shape) {
            if (d < 0) fail("a result axis would be negative (" + std::to_string(d) + ")");
            elements *= static_cast<double>(d);
        }
        if (elements > kMaxElements)
            fail("its result would hold " + std::to_string(static_cast<long long>(elements)) +
                 " elements, more than Crucible runs");
    }
    double scalar(std::size_t i) const {
        const auto& t = input(i);
        if (t.numel() != 1) fail("input " + std::to_string(i) + " must hold one value");
        return t.to(torch::kCPU, torch::kDouble).item<double>();
    }
    std::int64_t axis(std::int64_t a, std::int64_t rank) const {
        if (a < -rank || a >= rank)
            fail("axis " + std::to_string(a) + " is outside rank " + std::to_string(rank));
        return a < 0 ? a + rank : a;
    }
};

using Operator = std::function<Tensors(const NodeCall&)>;

// The spatial attributes of Conv and MaxPool on a 2-D input: stride, dilation and padding, with
// asymmetric pads applied beforehand (`pad_value`) since LibTorch pads both sides alike.
struct Window {
    std::vector<std::int64_t> strides, dilations, padding;
    torch::Tensor input;
};

Window window(const NodeCall& c, const torch::Tensor& x, double pad_value) {
    if (x.dim() != 4) c.fail("only 2-D (NCHW) inputs are run, not rank " + std::to_string(x.dim()));
    const auto auto_pad = c.get<std::string>("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID") c.fail("auto_pad " + auto_pad + " is not run");
    Window w;
    w.strides = c.get<std::vector<std::int64_t>>("strides", {1, 1});
    w.dilations = c.get<std::vector<std::int64_t>>("dilations", {1, 1});
    auto pads = c.get<std::vector<std::int64_t>>("pads", {0, 0, 0, 0});
    if (w.strides.size() != 2 || w.dilations.size() != 2 || pads.size() != 4)
        c.fail("strides, dilations and pads must be given for two axes");
    w.input = x;
    if (pads[0] != pads[2] || pads[1] != pads[3]) {  // (top, left, bottom, right)
        w.input = torch::constant_pad_nd(x, {pads[1], pads[3], pads[0], pads[2]}, pad_value);
        pads = {0, 0, 0, 0};
    }
    w.padding = {pads[0], pads[1]};
    return w;
}

Tensors conv(const NodeCall& c) {
    const auto w = window(c, c.input(0), 0.0);
    const auto& weight = c.input(1);
    const auto bias = c.has_input(2) ? c.input(2) : torch::Tensor();
    // Channels-last, as training runs it: oneDNN's fastest layout on the CPU (about 3x here).
    const auto format = torch::MemoryFormat::ChannelsLast;
    return {torch::conv2d(w.input.contiguous(format), weight.contiguous(format), bias, w.strides,
                          w.padding, w.dilations, c.get<std::int64_t>("group", 1))};
}

Tensors max_pool(const NodeCall& c) {
    if (c.node.outputs.size() > 1 && !c.node.outputs[1].empty())
        c.fail("the Indices output is not run");
    const auto w = window(c, c.input(0), -std::numeric_limits<double>::infinity());
    const auto kernel = c.get<std::vector<std::int64_t>>("kernel_shape", {});
    if (kernel.size() != 2) c.fail("kernel_shape must name two axes");
    return {torch::max_pool2d(w.input, kernel, w.strides, w.padding, w.dilations,
                              c.get<std::int64_t>("ceil_mode", 0) != 0)};
}

// Nearest-neighbour Resize (opset 11+: X, roi, scales, sizes) on the spatial axes.
Tensors resize(const NodeCall& c) {
    const auto& x = c.input(0);
    if (c.get<std::string>("mode", "nearest") != "nearest") c.fail("only mode=nearest is run");
    if (x.dim() == 0) c.fail("needs an input of at least one axis");
    const auto coordinates = c.get<std::string>("coordinate_transformation_mode", "half_pixel");
    const auto rounding = c.get<std::string>("nearest_mode", "round_prefer_floor");
    std::vector<double> scales(static_cast<std::size_t>(x.dim()), 1.0);
    std::vector<std::int64_t> sizes = x.sizes().vec();
    if (c.has_input(3) && c.input(3).numel() > 0) {
        sizes = c.ints(3);
        if (sizes.size() != scales.size()) c.fail("sizes must name every axis");
        for (std::size_t i = 0; i < sizes.size(); ++i)
            scales[i] = static_cast<double>(sizes[i]) / static_cast<double>(x.size(i64(i)));
    } else if (c.has_input(2) && c.input(2).numel() > 0) {
        const auto s = c.input(2).to(torch::kCPU, torch::kDouble).contiguous();
        if (s.numel() != x.dim()) c.fail("scales must name every axis");
        for (std::size_t i = 0; i < scales.size(); ++i) {
            scales[i] = s.data_ptr<double>()[i];
            const double size = std::floor(static_cast<double>(x.size(i64(i))) * scales[i]);
            if (!(scales[i] > 0) || !(size <= kMaxElements))  // NaN fails both
                c.fail("scales must be positive and leave a size Crucible runs");
            sizes[i] = static_cast<std::int64_t>(size);
        }
    } else {
        c.fail("needs scales or sizes");
    }
    c.check_size(sizes);
    auto y = x;
    for (std::size_t axis = 0; axis < scales.size(); ++axis) {
        const std::int64_t in = x.size(i64(axis)), out = sizes[axis];
        if (in == out) continue;
        std::vector<std::int64_t> index(static_cast<std::size_t>(out));
        for (std::int64_t o = 0; o < out; ++o) {
            const double s = scales[axis];
            double source = 0;
            if (coordinates == "asymmetric")
                source = static_cast<double>(o) / s;
            else if (coordinates == "half_pixel")
                source = (static_cast<double>(o) + 0.5) / s - 0.5;
            else if (coordinates == "pytorch_half_pixel")
                source = out > 1 ? (static_cast<double>(o) + 0.5) / s - 0.5 : 0.0;
            else if (coordinates == "align_corners")
                source = out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) /
                                       static_cast<double>(out - 1)
                                 : 0.0;
            else
                c.fail("coordinate_transformation_mode " + coordinates + " is not run");
            double picked = 0;
            if (rounding == "floor")
                picked = std::floor(source);
            else if (rounding == "ceil")
                picked = std::ceil(source);
            else if (rounding == "round_prefer_floor")
                picked =
                    source == std::floor(source) + 0.5 ? std::floor(source) : std::round(source);
            else if (rounding == "round_prefer_ceil")
                picked = std::round(source);
            else
                c.fail("nearest_mode " + rounding + " is not run");
            index[static_cast<std::size_t>(o)] =
                std::clamp(static_cast<std::int64_t>(picked), std::int64_t{0}, in - 1);
        }
        y = y.index_select(i64(axis), torch::tensor(index, torch::kLong).to(x.device()));
    }
    return {y};
}

Tensors reshape(const NodeCall& c) {
    const auto& x = c.input(0);
    auto shape = c.ints(1);
    if (c.get<std::int64_t>("allowzero", 0) == 0)
        for (std::size_t i = 0; i < shape.size(); ++i)
            if (shape[i] == 0) {
                if (i64(i) >= x.dim()) c.fail("a 0 in the shape has no input axis to copy");
                shape[i] = x.size(i64(i));
            }
    return {x.reshape(shape)};
}

Tensors transpose(const NodeCall& c) {
    const auto& x = c.input(0);
    std::vector<std::int64_t> reversed(static_cast<std::size_t>(x.dim()));
    std::iota(reversed.rbegin(), reversed.rend(), 0);
    const auto perm = c.get<std::vector<std::int64_t>>("perm", reversed);
    if (i64(perm.size()) != x.dim()) c.fail("perm must name every axis");
    return {x.permute(perm)};
}

Tensors softmax(const NodeCall& c) {
    const auto& x = c.input(0);
    if (c.opset >= 13) return {torch::softmax(x, c.axis(c.get<std::int64_t>("axis", -1), x.dim()))};
    // Before opset 13: over the input flattened to 2-D at `axis` (default 1).
    const auto axis = c.axis(c.get<std::int64_t>("axis", 1), x.dim());
    const auto rows = x.sizes().slice(0, static_cast<std::size_t>(axis));
    const std::int64_t n =
        std::accumulate(rows.begin(), rows.end(), std::int64_t{1}, std::multiplies<std::int64_t>());
    return {torch::softmax(x.reshape({n, -1}), 1).reshape(x.sizes())};
}

Tensors concat(const NodeCall& c) {
    if (c.in.empty()) c.fail("has no inputs");
    return {torch::cat(c.in, c.axis(c.get<std::int64_t>("axis", 0), c.input(0).dim()))};
}

// Slice (opset 10+: data, starts, ends, axes, steps), clamped as the specification says.
Tensors slice(const NodeCall& c) {
    auto y = c.input(0);
    const auto starts = c.ints(1), ends = c.ints(2);
    std::vector<std::int64_t> axes(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
    if (c.has_input(3)) axes = c.ints(3);
    std::vector<std::int64_t> steps(starts.size(), 1);
    if (c.has_input(4)) steps = c.ints(4);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
        c.fail("starts, ends, axes and steps differ in length");
    for (std::size_t i = 0; i < starts.size(); ++i) {
        const auto axis = c.axis(axes[i], y.dim());
        const std::int64_t n = y.size(axis), step = steps[i];
        if (step == 0) c.fail("a step is 0");
        const auto clamp_index = [&](std::int64_t v) {
            if (v < 0) v += n;
            return step > 0 ? std::clamp(v, std::int64_t{0}, n)
                            : std::clamp(v, std::int64_t{-1}, n - 1);
        };
        const std::int64_t begin = clamp_index(starts[i]), end = clamp_index(ends[i]);
        if (step == 1) {  // a view, no copy
            y = y.narrow(axis, begin, std::max<std::int64_t>(end - begin, 0));
            continue;
        }
        std::vector<std::int64_t> index;
        for (std::int64_t v = begin; step > 0 ? v < end : v > end; v += step)
            index.push_back(v);
        y = y.index_select(axis, torch::tensor(index, torch::kLong).to(y.device()));
    }
    return {y};
}

Tensors shape(const NodeCall& c) {
    const auto sizes = c.input(0).sizes().vec();
    const auto rank = static_cast<std::int64_t>(sizes.size());
    const auto bound = [rank](std::int64_t v) {
        return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank);
    };
    const std::int64_t begin = bound(c.get<std::int64_t>("start", 0));
    const std::int64_t end = bound(c.get<std::int64_t>("end", rank));
    const std::vector<std::int64_t> kept(sizes.begin() + begin,
                                         sizes.begin() + std::max(begin, end));
    return {torch::tensor(kept, torch::kLong).to(c.input(0).device())};
}

Tensors gather(const NodeCall& c) {
    const auto& x = c.input(0);
    const auto axis = c.axis(c.get<std::int64_t>("axis", 0), x.dim());
    auto index = c.input(1).to(torch::kLong);
    index = torch::where(index < 0, index + x.size(axis), index);
    std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().begin() + axis);
    for (auto d : index.sizes())
        shape.push_back(d);
    shape.insert(shape.end(), x.sizes().begin() + axis + 1, x.sizes().end());
    return {x.index_select(axis, index.flatten()).reshape(shape)};
}

// GatherND with batch_dims 0: each index row [k] picks data[i0, ..., ik-1] (a slice).
Tensors gather_nd(const NodeCall& c) {
    if (c.get<std::int64_t>("batch_dims", 0) != 0) c.fail("only batch_dims=0 is run");
    const auto& x = c.input(0);
    const auto index = c.input(1).to(torch::kLong);
    const std::int64_t k = index.size(-1);
    if (k > x.dim()) c.fail("index rows are longer than the data's rank");
    std::vector<std::int64_t> shape(index.sizes().begin(), index.sizes().end() - 1);
    shape.insert(shape.end(), x.sizes().begin() + k, x.sizes().end());
    auto flat_index = torch::zeros({index.numel() / std::max<std::int64_t>(k, 1)}, index.options());
    const auto rows = index.reshape({-1, k});
    std::int64_t stride = 1;
    for (std::int64_t j = k - 1; j >= 0; --j) {
        auto col = rows.select(1, j);
        col = torch::where(col < 0, col + x.size(j), col);
        flat_index = flat_index + col * stride;
        stride *= x.size(j);
    }
    std::vector<std::int64_t> flat_shape = {stride};
    flat_shape.insert(flat_shape.end(), x.sizes().begin() + k, x.sizes().end());
    return {x.reshape(flat_shape).index_select(0, flat_index).reshape(shape)};
}

Tensors range(const NodeCall& c) {
    const auto type = c.input(0).scalar_type();
    const auto options = torch::TensorOptions(type).device(c.input(0).device());
    const double start = c.scalar(0), limit = c.scalar(1), delta = c.scalar(2);
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
        c.fail("start, limit and delta must be finite and delta not 0");
    const double count = std::ceil((limit - start) / delta);
    if (count > kMaxElements)
        c.fail("its result would hold " + std::to_string(count) +
               " elements, more than Crucible runs");
    return {torch::arange(start, limit, delta, options)};
}

Tensors cast(const NodeCall& c) {
    const auto to = c.get<std::int64_t>("to", 0);
    switch (static_cast<onnx::DataType>(to)) {
        case onnx::DataType::Float:
        case onnx::DataType::Float16:
        case onnx::DataType::Uint8:
        case onnx::DataType::Int32:
        case onnx::DataType::Int64:
            return {c.input(0).to(scalar_type_of(static_cast<onnx::DataType>(to)))};
    }
    c.fail("cast to type " + std::to_string(to) + " is not run");
}

// Expand: bidirectional broadcasting of the input and the shape.
Tensors expand(const NodeCall& c) {
    const auto& x = c.input(0);
    const auto target = c.ints(1);
    const auto rank = std::max<std::int64_t>(x.dim(), i64(target.size()));
    std::vector<std::int64_t> shape(static_cast<std::size_t>(rank));
    for (std::int64_t i = 0; i < rank; ++i) {
        const std::int64_t xi = i - (rank - x.dim()), ti = i - (rank - i64(target.size()));
        const std::int64_t a = xi >= 0 ? x.size(xi) : 1;
        const std::int64_t b = ti >= 0 ? target[static_cast<std::size_t>(ti)] : 1;
        if (a != b && a != 1 && b != 1) c.fail("shapes do not broadcast");
        shape[static_cast<std::size_t>(i)] = a == 1 ? b : a;
    }
    c.check_size(shape);
    return {x.expand(shape).contiguous()};
}

Tensors unsqueeze(const NodeCall& c) {
    auto y = c.input(0);
    auto axes = c.opset >= 13 ? c.ints(1) : c.get<std::vector<std::int64_t>>("axes", {});
    const auto rank = y.dim() + i64(axes.size());
    for (auto& a : axes)
        a = c.axis(a, rank);
    std::sort(axes.begin(), axes.end());
    for (auto a : axes)
        y = y.unsqueeze(a);
    return {y};
}

// NonMaxSuppression: per batch and class, boxes scoring above the threshold, greedily by score
// (ties: the lower index first), dropping those whose IoU with a kept box is above the threshold.
// Output [K, 3] int64: batch, class, box index, in that order.
Tensors non_max_suppression(const NodeCall& c) {
    const auto boxes = c.input(0).to(torch::kCPU, torch::kFloat).contiguous();
    const auto scores = c.input(1).to(torch::kCPU, torch::kFloat).contiguous();
    if (boxes.dim() != 3 || boxes.size(2) != 4 || scores.dim() != 3 ||
        scores.size(0) != boxes.size(0) || scores.size(2) != boxes.size(1))
        c.fail("boxes must be [B, N, 4] and scores [B, C, N]");
    const std::int64_t max_out = c.has_input(2) ? c.ints(2).at(0) : 0;
    const double iou_limit = c.has_input(3) ? c.scalar(3) : 0.0;
    const bool thresholded = c.has_input(4);
    const double score_limit = thresholded ? c.scalar(4) : 0.0;
    const bool centred = c.get<std::int64_t>("center_point_box", 0) != 0;
    const std::int64_t n = boxes.size(1);
    // Corners (x1, y1, x2, y2) of every box, whatever the layout.
    std::vector<std::array<float, 4>> corners(static_cast<std::size_t>(boxes.size(0) * n));
    for (std::int64_t i = 0; i < boxes.size(0) * n; ++i) {
        const float* b = boxes.data_ptr<float>() + i * 4;
        auto& k = corners[static_cast<std::size_t>(i)];
        if (centred)
            k = {b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2};
        else  // [y1, x1, y2, x2], either corner first
            k = {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]),
                 std::max(b[0], b[2])};
    }
    const auto iou = [](const std::array<float, 4>& a, const std::array<float, 4>& b) {
        const float w = std::min(a[2], b[2]) - std::max(a[0], b[0]);
        const float h = std::min(a[3], b[3]) - std::max(a[1], b[1]);
        if (w <= 0 || h <= 0) return 0.0;
        const double inter = static_cast<double>(w) * h;
        const double uni = static_cast<double>(a[2] - a[0]) * (a[3] - a[1]) +
                           static_cast<double>(b[2] - b[0]) * (b[3] - b[1]) - inter;
        return uni <= 0 ? 0.0 : inter / uni;
    };
    std::vector<std::int64_t> selected;
    for (std::int64_t b = 0; b < boxes.size(0) && max_out > 0; ++b)
        for (std::int64_t cls = 0; cls < scores.size(1); ++cls) {
            const float* s = scores.data_ptr<float>() + (b * scores.size(1) + cls) * n;
            std::vector<std::int64_t> order;
            for (std::int64_t i = 0; i < n; ++i)
                if (!thresholded || s[i] > score_limit) order.push_back(i);
            std::stable_sort(order.begin(), order.end(),
                             [s](std::int64_t x, std::int64_t y) { return s[x] > s[y]; });
            std::vector<std::int64_t> kept;
            for (auto i : order) {
                if (i64(kept.size()) >= max_out) break;
                const auto& box = corners[static_cast<std::size_t>(b * n + i)];
                bool suppressed = false;
                for (auto k : kept)
                    if (iou(box, corners[static_cast<std::size_t>(b * n + k)]) > iou_limit) {
                        suppressed = true;
                        break;
                    }
                if (!suppressed) kept.push_back(i);
            }
            for (auto i : kept)
                selected.insert(selected.end(), {b, cls, i});
        }
    return {torch::tensor(selected, torch::kLong)
                .reshape({i64(selected.size() / 3), 3})
                .to(c.input(0).device())};
}

// Integer division truncates in ONNX; LibTorch's `/` would give floats.
Tensors divide(const NodeCall& c) {
    const auto &a = c.input(0), &b = c.input(1);
    if (torch::isIntegralType(a.scalar_type(), false) &&
        torch::isIntegralType(b.scalar_type(), false))
        return {torch::div(a, b, "trunc")};
    return {a / b};
}

const std::map<std::string, Operator>& operator_table() {
    static const std::map<std::string, Operator> table = {
        {"Add", [](const NodeCall& c) { return Tensors{c.input(0) + c.input(1)}; }},
        {"Sub", [](const NodeCall& c) { return Tensors{c.input(0) - c.input(1)}; }},
        {"Mul", [](const NodeCall& c) { return Tensors{c.input(0) * c.input(1)}; }},
        {"Div", &divide},
        {"Sigmoid", [](const NodeCall& c) { return Tensors{torch::sigmoid(c.input(0))}; }},
        {"Identity", [](const NodeCall& c) { return Tensors{c.input(0)}; }},
        {"Conv", &conv},
        {"MaxPool", &max_pool},
        {"Resize", &resize},
        {"Reshape", &reshape},
        {"Transpose", &transpose},
        {"Softmax", &softmax},
        {"Concat", &concat},
        {"Slice", &slice},
        {"Shape", &shape},
        {"Gather", &gather},
        {"GatherND", &gather_nd},
        {"Range", &range},
        {"Cast", &cast},
        {"Expand", &expand},
        {"Unsqueeze", &unsqueeze},
        {"NonMaxSuppression", &non_max_suppression},
    };
    return table;
}

}  // namespace

OnnxRunner::OnnxRunner(const onnx::Model& model, torch::Device device, std::string where)
    : opset_(model.opset), device_(device), where_(std::move(where)) {
    if (opset_ < 11 || opset_ > 21)
        throw InputError(where_, "opset " + std::to_string(opset_) +
                                     " is outside what Crucible runs (11 to 21)");
    const auto& table = operator_table();
    for (const auto& node : model.graph.nodes)
        if (!table.count(node.op_type))
            throw InputError(where_, "node '" + node.name + "' uses " + node.op_type +
                                         ", which Crucible's ONNX runner does not run");
    for (const auto& t : model.graph.initializers)
        constants_[t.name] = tensor_from_onnx(t, where_).to(device_);
    // Convolution weights in the layout conv() runs them in, once.
    for (const auto& node : model.graph.nodes)
        if (node.op_type == "Conv" && node.inputs.size() > 1) {
            const auto found = constants_.find(node.inputs[1]);
            if (found != constants_.end() && found->second.dim() == 4)
                found->second = found->second.contiguous(torch::MemoryFormat::ChannelsLast);
        }
    graph_ = model.graph;
    graph_.initializers.clear();
    find_silu();
}

void OnnxRunner::find_silu() {
    const auto& nodes = graph_.nodes;
    fusion_.assign(nodes.size(), Fusion::None);
    silu_input_.assign(nodes.size(), 0);
    std::unordered_map<std::string, int> readers;
    std::unordered_map<std::string, std::size_t> sigmoid_making;  // output -> node index
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (const auto& name : nodes[i].inputs)
            ++readers[name];
        if (nodes[i].op_type == "Sigmoid" && nodes[i].inputs.size() == 1 &&
            nodes[i].outputs.size() == 1)
            sigmoid_making[nodes[i].outputs[0]] = i;
    }
    for (const auto& o : graph_.outputs)
        ++readers[o.name];
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto& n = nodes[i];
        if (n.op_type != "Mul" || n.inputs.size() != 2) continue;
        for (std::size_t k = 0; k < 2; ++k) {
            const auto found = sigmoid_making.find(n.inputs[1 - k]);
            if (found == sigmoid_making.end() || found->second > i) continue;
            if (nodes[found->second].inputs[0] != n.inputs[k] || readers[n.inputs[1 - k]] != 1)
                continue;
            fusion_[found->second] = Fusion::SkippedSigmoid;
            fusion_[i] = Fusion::Silu;
            silu_input_[i] = k;
            break;
        }
    }
}

std::vector<torch::Tensor> OnnxRunner::run(const std::vector<torch::Tensor>& inputs) const {
    if (inputs.size() != graph_.inputs.size())
        throw InputError(where_, "the graph takes " + std::to_string(graph_.inputs.size()) +
                                     " inputs, not " + std::to_string(inputs.size()));
    torch::NoGradGuard no_grad;
    // What the inputs and nodes make; the constants are read where they are (no copy per run).
    std::unordered_map<std::string, torch::Tensor> values;
    const auto find_value = [&](const std::string& name) -> const torch::Tensor* {
        if (const auto found = values.find(name); found != values.end()) return &found->second;
        if (const auto found = constants_.find(name); found != constants_.end())
            return &found->second;
        return nullptr;
    };
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto& declared = graph_.inputs[i];
        if (inputs[i].scalar_type() != scalar_type_of(declared.type))
            throw InputError(where_, "input '" + declared.name + "' must be " +
                                         c10::toString(scalar_type_of(declared.type)) + ", not " +
                                         c10::toString(inputs[i].scalar_type()));
        values[declared.name] = inputs[i].to(device_);
    }
    const auto& table = operator_table();
    for (std::size_t index = 0; index < graph_.nodes.size(); ++index) {
        const auto& node = graph_.nodes[index];
        if (fusion_[index] == Fusion::SkippedSigmoid) continue;  // its Mul runs silu
        Tensors in;
        for (std::size_t k = 0; k < node.inputs.size(); ++k) {
            const auto& name = node.inputs[k];
            const bool fused_away = fusion_[index] == Fusion::Silu && k != silu_input_[index];
            if (name.empty() || fused_away) {  // omitted, or the skipped Sigmoid's output
                in.emplace_back();
                continue;
            }
            const torch::Tensor* value = find_value(name);
            if (!value)
                throw InputError(where_, "node '" + node.name + "' reads '" + name +
                                             "', which nothing before it makes");
            in.push_back(*value);
        }
        const NodeCall call{node, in, opset_, where_};
        Tensors out;
        try {
            out = fusion_[index] == Fusion::Silu
                      ? Tensors{torch::silu(call.input(silu_input_[index]))}
                      : table.at(node.op_type)(call);
        } catch (const InputError&) {
            throw;
        } catch (const c10::Error& e) {  // LibTorch's own check (shapes, types)
            call.fail(e.what_without_backtrace());
        } catch (const std::bad_alloc&) {
            call.fail("needs more memory than this machine has");
        } catch (const std::length_error&) {
            call.fail("asks for a result too large to hold");
        }
        for (std::size_t i = 0; i < node.outputs.size() && i < out.size(); ++i)
            if (!node.outputs[i].empty()) values[node.outputs[i]] = std::move(out[i]);
    }
    std::vector<torch::Tensor> outputs;
    for (const auto& o : graph_.outputs) {
        const torch::Tensor* value = find_value(o.name);
        if (!value) throw InputError(where_, "output '" + o.name + "' is made by no node");
        outputs.push_back(*value);
    }
    return outputs;
}

std::vector<std::string> OnnxRunner::operators() {
    std::vector<std::string> out;
    for (const auto& [name, fn] : operator_table())
        out.push_back(name);
    return out;
}

}  // namespace crucible::engine
