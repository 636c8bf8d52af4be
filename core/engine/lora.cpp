#include "core/engine/lora.h"

#include <cmath>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/safetensors_torch.h"

namespace crucible::engine {
namespace {

// The input of the adapter: dropout in training, in the adapter's dtype.
torch::Tensor adapter_input(const LoraWeights& w, const torch::Tensor& x, bool training) {
    torch::Tensor h = x;
    if (w.dropout > 0 && training) h = torch::dropout(h, w.dropout, /*train=*/true);
    if (h.scalar_type() != w.down.scalar_type()) h = h.to(w.down.scalar_type());
    return h;
}

}  // namespace

double LoraOptions::lora_scale(double alpha, std::int64_t rank, bool rslora) {
    const double r = static_cast<double>(rank);
    return rslora ? alpha / std::sqrt(r) : alpha / r;
}

LoraWeights LoraWeights::create(std::int64_t in, std::int64_t out, const LoraOptions& options,
                                bool conv1x1, torch::Device device) {
    LoraWeights w;
    w.rank = options.rank;
    w.alpha = options.alpha;
    w.dropout = options.dropout;
    w.scale = options.scale();
    std::vector<std::int64_t> down_shape{options.rank, in}, up_shape{out, options.rank};
    if (conv1x1) {
        down_shape.insert(down_shape.end(), {1, 1});
        up_shape.insert(up_shape.end(), {1, 1});
    }
    if (device.is_meta()) {  // shapes only: a model laid out before its weights are read
        const auto meta = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kMeta);
        w.down = torch::empty(down_shape, meta);
        w.up = torch::empty(up_shape, meta);
        return w;
    }
    // Drawn on the CPU, so an adapter starts the same on every device. Kaiming-uniform with
    // a = √5 is U(±1/√fan_in), PyTorch's default for a Linear's weight.
    torch::NoGradGuard no_grad;
    w.down = torch::empty(down_shape, torch::kFloat32);
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    w.down.uniform_(-bound, bound);
    w.up = torch::zeros(up_shape, torch::kFloat32);
    w.down = w.down.to(device);
    w.up = w.up.to(device);
    return w;
}

torch::Tensor LoraWeights::add_to_linear(const torch::Tensor& y, const torch::Tensor& x,
                                         bool training) const {
    const torch::Tensor a = torch::linear(adapter_input(*this, x, training), down);
    if (a.scalar_type() != y.scalar_type())
        return y + (torch::linear(a, up) * scale).to(y.scalar_type());
    // y + scale * (a B^T) in one GEMM: no scaled copy of the delta, no separate add.
    const auto features = y.size(-1);
    return at::addmm(y.reshape({-1, features}), a.reshape({-1, a.size(-1)}), up.t(),
                     /*beta=*/1, /*alpha=*/scale)
        .view(y.sizes());
}

torch::Tensor LoraWeights::add_to_conv1x1(const torch::Tensor& y, const torch::Tensor& x,
                                          bool training) const {
    const torch::Tensor h =
        torch::conv2d(torch::conv2d(adapter_input(*this, x, training), down), up) * scale;
    return y + (h.scalar_type() == y.scalar_type() ? h : h.to(y.scalar_type()));
}

torch::Tensor LoraWeights::delta() const {
    const torch::Tensor d = down.reshape({down.size(0), -1}).to(torch::kFloat32);
    const torch::Tensor u = up.reshape({up.size(0), -1}).to(torch::kFloat32);
    torch::Tensor product = torch::matmul(u, d) * scale;
    if (down.dim() == 4) product = product.reshape({up.size(0), down.size(1), 1, 1});
    return product;
}

torch::Tensor LoraWeights::merged(const torch::Tensor& weight) const {
    torch::NoGradGuard no_grad;
    const torch::Tensor d = delta().reshape(weight.sizes()).to(weight.device());
    return (weight.to(torch::kFloat32) + d).to(weight.scalar_type());
}

void LoraWeights::set_alpha(double new_alpha, bool rslora) {
    alpha = new_alpha;
    scale = LoraOptions::lora_scale(alpha, rank, rslora);
}

void register_lora(torch::nn::Module& owner, LoraWeights& weights, LoraLayout layout) {
    if (layout == LoraLayout::Peft) {
        owner.register_module("lora_A", LoraMatrix(weights.down));
        owner.register_module("lora_B", LoraMatrix(weights.up));
    } else {
        weights.down = owner.register_parameter("down", weights.down);
        weights.up = owner.register_parameter("up", weights.up);
    }
}

void unregister_lora(torch::nn::Module& owner) {
    owner.unregister_module("lora_A");
    owner.unregister_module("lora_B");
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

std::string peft_lora_tensor_name(const std::string& module, char which) {
    return "base_model.model." + module + (which == 'A' ? ".lora_A.weight" : ".lora_B.weight");
}

std::map<std::string, torch::Tensor> peft_lora_tensors(
    const std::vector<std::pair<std::string, const LoraWeights*>>& adapters) {
    std::map<std::string, torch::Tensor> out;
    for (const auto& [module, w] : adapters) {
        out[peft_lora_tensor_name(module, 'A')] = w->down.detach().to(torch::kCPU).contiguous();
        out[peft_lora_tensor_name(module, 'B')] = w->up.detach().to(torch::kCPU).contiguous();
    }
    return out;
}

void save_peft_lora(const std::filesystem::path& folder,
                    const std::map<std::string, torch::Tensor>& tensors, const Json& config) {
    if (tensors.empty()) throw Error("the model has no LoRA adapter to save");
    std::filesystem::create_directories(folder);
    save_safetensors(folder / "adapter_model.safetensors", tensors, {{"format", "pt"}});
    write_json_file(folder / "adapter_config.json", config);
}

}  // namespace crucible::engine
