#include "core/engine/lora_options.h"

#include <cmath>

namespace crucible::engine {

double LoraOptions::lora_scale(double alpha, std::int64_t rank, bool rslora) {
    const double r = static_cast<double>(rank);
    return rslora ? alpha / std::sqrt(r) : alpha / r;
}

Json peft_lora_config(const LoraOptions& options, const std::vector<std::string>& targets,
                      const std::string& base_model, const std::string& task_type) {
    Json j;
    j["peft_type"] = "LORA";
    j["task_type"] = task_type.empty() ? Json() : Json(task_type);
    j["r"] = options.rank;
    j["lora_alpha"] = options.alpha;
    j["lora_dropout"] = options.dropout;
    j["target_modules"] = targets;
    j["bias"] = "none";
    j["fan_in_fan_out"] = false;
    j["use_rslora"] = options.rslora;
    j["base_model_name_or_path"] = base_model;
    j["inference_mode"] = true;
    j["modules_to_save"] = nullptr;
    j["init_lora_weights"] = true;
    j["layers_to_transform"] = nullptr;
    j["layers_pattern"] = nullptr;
    j["rank_pattern"] = Json::object();
    j["alpha_pattern"] = Json::object();
    j["revision"] = nullptr;
    j["use_dora"] = false;
    return j;
}

}  // namespace crucible::engine
