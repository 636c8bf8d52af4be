#include "plugins/detect/task/exported_detector.h"

#include <algorithm>
#include <cstdlib>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/onnx_model_reader.h"
#include "core/engine/onnx_runner.h"

namespace crucible::detect {
namespace {

// The reference exporter's names: a Python dict literal of int keys and quoted strings,
// {0: 'person', 1: "car"}, keys 0, 1, ... in order.
std::vector<std::string> python_names(const std::string& text, const std::string& where) {
    const auto bad = [&](const std::string& what) -> InputError {
        return InputError(where, "metadata 'names' " + what + ": " + text.substr(0, 200));
    };
    std::vector<std::string> out;
    std::size_t i = 0;
    const auto skip_space = [&] {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t'))
            ++i;
    };
    skip_space();
    if (i >= text.size() || text[i++] != '{') throw bad("is not a {index: 'name'} dict");
    skip_space();
    while (i < text.size() && text[i] != '}') {
        std::size_t key_end = i;
        while (key_end < text.size() && text[key_end] >= '0' && text[key_end] <= '9')
            ++key_end;
        if (key_end == i || key_end - i > 9) throw bad("has a key that is not an index");
        if (std::stoul(text.substr(i, key_end - i)) != out.size())
            throw bad("does not number its classes 0, 1, 2, ...");
        i = key_end;
        skip_space();
        if (i >= text.size() || text[i++] != ':') throw bad("misses a ':'");
        skip_space();
        if (i >= text.size() || (text[i] != '\'' && text[i] != '"'))
            throw bad("has an unquoted name");
        const char quote = text[i++];
        std::string name;
        while (i < text.size() && text[i] != quote) {
            if (text[i] == '\\' && i + 1 < text.size()) ++i;
            name += text[i++];
        }
        if (i >= text.size()) throw bad("has an unterminated name");
        ++i;
        out.push_back(std::move(name));
        skip_space();
        if (i < text.size() && text[i] == ',') ++i;
        skip_space();
    }
    if (i >= text.size()) throw bad("is not closed");
    return out;
}

std::vector<std::string> class_names(const onnx::Model& model, std::int64_t classes,
                                     const std::string& where) {
    std::vector<std::string> names;
    if (const auto* json = onnx::find_metadata(model, "crucible_names")) {
        const Json parsed = parse_json(*json, where + ": metadata 'crucible_names'");
        if (!parsed.is_array()) throw InputError(where, "metadata 'crucible_names' is not a list");
        for (const auto& n : parsed) {
            if (!n.is_string())
                throw InputError(where, "metadata 'crucible_names' holds a non-string");
            names.push_back(n.get<std::string>());
        }
    } else if (const auto* literal = onnx::find_metadata(model, "names")) {
        names = python_names(*literal, where);
    } else {
        for (std::int64_t c = 0; c < classes; ++c)
            names.push_back(std::to_string(c));
    }
    if (classes > 0 && static_cast<std::int64_t>(names.size()) != classes)
        throw InputError(where, "its metadata names " + std::to_string(names.size()) +
                                    " classes but its output has " + std::to_string(classes));
    return names;
}

std::int64_t fixed(const onnx::Dim& d) {
    return d.param.empty() && d.value > 0 ? d.value : 0;
}

}  // namespace

std::string ExportedDetectorInfo::describe(const std::string& file) const {
    std::string size = batch ? std::to_string(batch) : "N";
    size += "x3x" + (height ? std::to_string(height) : "H") + "x" +
            (width ? std::to_string(width) : "W");
    return file + " (ONNX, " + std::to_string(names.size()) + " classes, " +
           (half ? "fp16" : "fp32") + ", input " + size + (nms ? ", NMS in the graph" : "") + ")";
}

ExportedDetectorInfo exported_detector_info(const onnx::Model& model, const std::string& where) {
    const auto& g = model.graph;
    if (g.inputs.size() != 1 || g.inputs[0].shape.size() != 4)
        throw InputError(where, "is not a detector: it should take one input [B, 3, H, W]");
    if (g.outputs.empty()) throw InputError(where, "is not a detector: its graph has no output");
    const auto& in = g.inputs[0];
    if (in.type != onnx::DataType::Float && in.type != onnx::DataType::Float16)
        throw InputError(where, "its input '" + in.name + "' is not float or float16");
    if (in.shape[1].param.empty() && in.shape[1].value != 3)  // a named size is left to run time
        throw InputError(where, "its input '" + in.name + "' does not have 3 channels");
    ExportedDetectorInfo info;
    info.batch = fixed(in.shape[0]);
    info.height = fixed(in.shape[2]);
    info.width = fixed(in.shape[3]);
    info.half = in.type == onnx::DataType::Float16;
    const auto& out = g.outputs[0];
    info.nms = out.shape.size() == 2 && fixed(out.shape[1]) == 7;
    if (!info.nms && (out.shape.size() != 3 || fixed(out.shape[1]) <= 4))
        throw InputError(where, "is not a detector: its output '" + out.name +
                                    "' is neither [B, 4 + classes, anchors] nor [K, 7] rows");
    const std::int64_t classes = info.nms ? 0 : fixed(out.shape[1]) - 4;
    info.names = class_names(model, classes, where);
    if (const auto* size = onnx::find_metadata(model, "imgsz")) {  // "[640, 640]"
        const auto digits = size->find_first_of("0123456789");
        if (digits != std::string::npos && size->size() - digits < 64)
            info.exported_size = std::strtoll(size->c_str() + digits, nullptr, 10);
        if (info.exported_size < 32 || info.exported_size > 65536 || info.exported_size % 32)
            info.exported_size = 0;  // not a size it can run at
    }
    if (info.names.empty()) throw InputError(where, "names no classes");
    return info;
}

bool is_onnx_model(const std::string& model) {
    const auto ext = path_to_utf8(path_from_utf8(model).extension());
    return ext == ".onnx" || ext == ".ONNX";
}

ExportedDetector::ExportedDetector(const std::filesystem::path& file, const torch::Device& device)
    : file_(file), device_(device) {
    const auto model = onnx::read_onnx_model(file);
    const std::string where = path_to_utf8(file);
    info_ = exported_detector_info(model, where);
    runner_ = std::make_unique<engine::OnnxRunner>(model, device, where);
}

ExportedDetector::~ExportedDetector() = default;

std::string ExportedDetector::description() const {
    return info_.describe(path_to_utf8(file_.filename()));
}

int inference_size(long long imgsz, const ExportedDetector* exported) {
    if (imgsz != 0 && (imgsz < 0 || imgsz % 32 != 0))
        throw InputError("imgsz",
                         std::to_string(imgsz) + " is not a multiple of 32 (the largest stride)");
    if (exported) return exported->input_size(static_cast<int>(imgsz));
    return imgsz ? static_cast<int>(imgsz) : 640;
}

int ExportedDetector::input_size(int requested) const {
    if (info_.height == 0 && info_.width == 0) {
        if (requested) return requested;
        return info_.exported_size ? static_cast<int>(info_.exported_size) : 640;
    }
    if (info_.height != info_.width || info_.height == 0)
        throw InputError("model", path_to_utf8(file_) + " takes " + std::to_string(info_.height) +
                                      "x" + std::to_string(info_.width) +
                                      " images; only square inputs are run");
    return static_cast<int>(info_.height);
}

torch::Tensor ExportedDetector::run_batch(const torch::Tensor& images) const {
    const auto x = images.to(device_, info_.half ? torch::kHalf : torch::kFloat);
    return runner_->run({x}).at(0).to(torch::kCPU, torch::kFloat).contiguous();
}

std::vector<torch::Tensor> ExportedDetector::detect(const torch::Tensor& images,
                                                    const NmsOptions& nms) const {
    const std::int64_t n = images.size(0);
    const std::int64_t step = info_.batch ? info_.batch : n;
    std::vector<torch::Tensor> kept;
    for (std::int64_t begin = 0; begin < n; begin += step) {
        const std::int64_t count = std::min(step, n - begin);
        auto chunk = images.narrow(0, begin, count);
        if (count < step)  // a fixed batch: blank images fill it
            chunk = torch::cat(
                {chunk, torch::zeros({step - count, images.size(1), images.size(2), images.size(3)},
                                     images.options())});
        const auto out = run_batch(chunk);
        if (!info_.nms) {
            auto per_image = non_max_suppression(out.narrow(0, 0, count), nms);
            kept.insert(kept.end(), per_image.begin(), per_image.end());
            continue;
        }
        // Rows [K, 7] = batch, x1, y1, x2, y2, score, class -> per image [n, 6], best first.
        for (std::int64_t i = 0; i < count; ++i) {
            const auto mine = out.index({(out.select(1, 0) == static_cast<double>(i)) &
                                         (out.select(1, 5) > nms.conf_threshold)});
            auto rows = mine.narrow(1, 1, 6);
            const auto order = std::get<1>(rows.select(1, 4).sort(/*stable=*/true, 0, true));
            rows = rows.index_select(0, order);
            kept.push_back(rows.narrow(0, 0, std::min<std::int64_t>(rows.size(0), nms.max_det)));
        }
    }
    return kept;
}

InferenceModel load_inference_model(const std::string& model, const torch::Device& device) {
    InferenceModel m;
    if (is_onnx_model(model)) {
        m.exported = std::make_unique<ExportedDetector>(path_from_utf8(model), device);
        m.names = m.exported->info().names;
        m.classes = static_cast<std::int64_t>(m.names.size());
        m.description = m.exported->description();
    } else {
        m.module = load_for_inference(model, device);
        m.classes = m.module.model->num_classes();
        m.names = m.module.names;
        m.description = m.module.description;
    }
    return m;
}

}  // namespace crucible::detect
