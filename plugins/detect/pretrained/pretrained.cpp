#include "plugins/detect/pretrained/pretrained.h"

#include <map>
#include <optional>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/shape_text.h"

namespace crucible::detect {
namespace {

// The model's parameters and buffers by name, in registration order.
std::vector<std::pair<std::string, torch::Tensor>> model_tensors(DetectionModelImpl& model) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& p : model.named_parameters())
        out.emplace_back(p.key(), p.value());
    for (const auto& b : model.named_buffers())
        out.emplace_back(b.key(), b.value());
    return out;
}

// "model.22." for the head (the module holding `dfl.conv.weight`).
std::string head_prefix(const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
    const std::string dfl = "dfl.conv.weight";
    for (const auto& [name, t] : tensors)
        if (name.size() > dfl.size() &&
            name.compare(name.size() - dfl.size(), dfl.size(), dfl) == 0)
            return name.substr(0, name.size() - dfl.size());
    return "model.22.";
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// `model.22.cv3.<i>.2.weight` / `.bias`: the per-level class-logit conv.
bool is_class_output(const std::string& name, const std::string& head) {
    const std::string cv3 = head + "cv3.";
    if (!starts_with(name, cv3)) return false;
    const std::size_t dot = name.find('.', cv3.size());
    if (dot == std::string::npos) return false;
    const std::string rest = name.substr(dot + 1);
    return rest == "2.weight" || rest == "2.bias";
}

PretrainedLoadReport copy_weights(DetectionModelImpl& model, const engine::PtCheckpoint& ck,
                                  const std::string& where, bool new_head) {
    auto targets = model_tensors(model);
    const std::string head = head_prefix(targets);
    std::map<std::string, const torch::Tensor*> source;
    for (const auto& [name, t] : ck.state_dict)
        source[name] = &t;

    PretrainedLoadReport report;
    std::vector<std::string> problems;
    torch::NoGradGuard no_grad;
    for (auto& [name, target] : targets) {
        auto it = source.find(name);
        const bool class_branch = new_head && starts_with(name, head + "cv3.");
        if (it == source.end()) {
            problems.push_back("missing '" + name + "'");
            continue;
        }
        const torch::Tensor& src = *it->second;
        source.erase(it);
        if (new_head &&
            (is_class_output(name, head) || (class_branch && src.sizes() != target.sizes()))) {
            report.reinitialized.push_back(name);
            continue;
        }
        if (src.sizes() != target.sizes()) {
            problems.push_back("'" + name + "' is " + shape_text(src.sizes()) +
                               " in the checkpoint but " + shape_text(target.sizes()) +
                               " in the model");
            continue;
        }
        target.copy_(src.to(target.scalar_type()));
        report.loaded.push_back(name);
    }
    for (const auto& [name, t] : source)
        problems.push_back("unexpected '" + name + "'");
    if (!problems.empty()) {
        std::string text;
        for (std::size_t i = 0; i < problems.size() && i < 8; ++i) {
            if (i) text += "; ";
            text += problems[i];
        }
        if (problems.size() > 8) text += "; ... (" + std::to_string(problems.size()) + " in all)";
        throw InputError(where,
                         "checkpoint does not match Crucible's YOLOv8" + ck.scale + ": " + text);
    }
    return report;
}

}  // namespace

YoloScale pretrained_scale(const engine::PtCheckpoint& ck, const std::string& where) {
    if (ck.scale.size() != 1)
        throw InputError(where, "checkpoint names no YOLOv8 scale (n, s, m, l, x)");
    return yolo_scale(ck.scale[0]);
}

int64_t pretrained_num_classes(const engine::PtCheckpoint& ck, const std::string& where) {
    if (ck.nc) return *ck.nc;
    if (!ck.names.empty()) return static_cast<int64_t>(ck.names.size());
    throw InputError(where, "checkpoint names no class count (nc)");
}

PretrainedLoadReport load_pretrained(DetectionModelImpl& model, const engine::PtCheckpoint& ck,
                                     const std::string& where) {
    return copy_weights(model, ck, where, false);
}

DetectionModel model_from_pretrained(const engine::PtCheckpoint& ck, const std::string& where) {
    DetectionModel model(
        DetectionModelOptions(pretrained_scale(ck, where), pretrained_num_classes(ck, where)));
    load_pretrained(*model, ck, where);
    return model;
}

DetectionModel model_from_pretrained_new_head(const engine::PtCheckpoint& ck, int64_t num_classes,
                                              const std::string& where,
                                              PretrainedLoadReport* report) {
    if (num_classes < 1) throw InputError(where, "class count must be at least 1");
    DetectionModel model(DetectionModelOptions(pretrained_scale(ck, where), num_classes));
    const bool new_head = num_classes != pretrained_num_classes(ck, where);
    PretrainedLoadReport r = copy_weights(*model, ck, where, new_head);
    if (report) *report = std::move(r);
    return model;
}

DetectionModel load_pretrained_file(const std::filesystem::path& path,
                                    std::optional<int64_t> num_classes,
                                    std::vector<std::string>* names_out,
                                    PretrainedLoadReport* report) {
    const std::string where = path_to_utf8(path);
    const engine::PtCheckpoint ck = engine::read_pt_checkpoint(path);
    if (names_out) *names_out = ck.names;
    if (num_classes) return model_from_pretrained_new_head(ck, *num_classes, where, report);
    PretrainedLoadReport r;
    DetectionModel model(
        DetectionModelOptions(pretrained_scale(ck, where), pretrained_num_classes(ck, where)));
    r = load_pretrained(*model, ck, where);
    if (report) *report = std::move(r);
    return model;
}

}  // namespace crucible::detect
