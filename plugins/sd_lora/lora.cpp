#include "plugins/sd_lora/lora.h"

#include <torch/torch.h>

#include <cmath>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/base/shape_text.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/ldm_names.h"
#include "plugins/sd_lora/nn.h"
#include "plugins/sd_lora/state_dict.h"

namespace crucible::sd {
namespace {

std::string kohya_key(const std::string& prefix, const std::string& path) {
    std::string key = prefix + "_" + path;
    for (std::size_t i = prefix.size(); i < key.size(); ++i)
        if (key[i] == '.') key[i] = '_';
    return key;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

LoraTarget make_target(const std::string& prefix, const std::string& path,
                       const std::shared_ptr<torch::nn::Module>& m) {
    LoraTarget t;
    t.module = path;
    t.kohya = kohya_key(prefix, path);
    t.layer = m;
    if (auto* lin = dynamic_cast<LinearImpl*>(m.get())) {
        t.in = lin->in_features;
        t.out = lin->out_features;
    } else if (auto* conv = dynamic_cast<Conv2dImpl*>(m.get())) {
        t.in = conv->in_channels;
        t.out = conv->out_channels;
        t.conv = true;
    }
    return t;
}

// Whether the target's kohya key starts with `kohya_prefix` + "_" (always, for an empty prefix).
bool has_prefix(const LoraTarget& t, const std::string& kohya_prefix) {
    return kohya_prefix.empty() || t.kohya.rfind(kohya_prefix + "_", 0) == 0;
}

// kohya's SDXL trainer names UNet adapters by the original (LDM) module names:
// lora_unet_input_blocks_4_1_transformer_blocks_0_attn1_to_q, lora_unet_middle_block_1_proj_in.
std::string sdxl_unet_kohya_key(const UNetConfig& c, const std::string& path) {
    const auto ldm = unet_ldm_name(path + ".weight", c.layers_per_block, c.down_cross_attention);
    const std::string prefix = kLdmUNetPrefix, suffix = ".weight";
    if (!ldm || ldm->rfind(prefix, 0) != 0 || !ends_with(*ldm, suffix))
        throw Error("no LDM name for UNet module " + path);
    return kohya_key("lora_unet",
                     ldm->substr(prefix.size(), ldm->size() - prefix.size() - suffix.size()));
}

// The kohya key names a text-encoder adapter: lora_te_ (SD 1.x), lora_te1_ / lora_te2_ (SDXL).
bool is_text_encoder_key(const std::string& kohya) {
    for (const char* prefix : {"lora_te_", "lora_te1_", "lora_te2_"})
        if (kohya.rfind(prefix, 0) == 0) return true;
    return false;
}

}  // namespace

std::vector<LoraTarget> unet_lora_targets(UNetImpl& unet) {
    const bool sdxl = unet.config.text_time_conditioning();
    std::vector<LoraTarget> out;
    for (const auto& item : unet.named_modules("", false)) {
        const std::string& path = item.key();
        // Inside a spatial transformer: <...>.attentions.N.{proj_in, proj_out,
        // transformer_blocks...}
        const auto at = path.find(".attentions.");
        if (at == std::string::npos) continue;
        const bool proj = ends_with(path, ".proj_in") || ends_with(path, ".proj_out");
        const bool in_block = path.find(".transformer_blocks.") != std::string::npos;
        if (!proj && !in_block) continue;
        if (!dynamic_cast<LinearImpl*>(item.value().get()) &&
            !(proj && dynamic_cast<Conv2dImpl*>(item.value().get())))
            continue;
        out.push_back(make_target("lora_unet", path, item.value()));
        if (sdxl) out.back().kohya = sdxl_unet_kohya_key(unet.config, path);
    }
    return out;
}

std::vector<LoraTarget> text_encoder_lora_targets(torch::nn::Module& te,
                                                  const std::string& prefix) {
    std::vector<LoraTarget> out;
    for (const auto& item : te.named_modules("", false)) {
        const std::string& path = item.key();
        if (path.find(".encoder.layers.") == std::string::npos) continue;
        if (!dynamic_cast<LinearImpl*>(item.value().get())) continue;
        for (const char* name : {".q_proj", ".k_proj", ".v_proj", ".out_proj", ".fc1", ".fc2"})
            if (ends_with(path, name)) out.push_back(make_target(prefix, path, item.value()));
    }
    return out;
}

LoraNetworkImpl::LoraNetworkImpl(std::vector<LoraTarget> t, const LoraOptions& o)
    : targets(std::move(t)), options(o) {
    if (o.rank < 1) throw InputError("lora_rank", "must be at least 1");
    if (!(o.alpha > 0)) throw InputError("lora_alpha", "must be positive");
    if (o.dropout < 0 || o.dropout >= 1) throw InputError("lora_dropout", "must be in [0, 1)");
    for (const auto& target : targets)
        adapters.push_back(
            register_module(target.kohya, LoraAdapter(target.in, target.out, o, target.conv)));
}

void LoraNetworkImpl::install() {
    for (std::size_t i = 0; i < targets.size(); ++i) {
        if (auto* lin = dynamic_cast<LinearImpl*>(targets[i].layer.get())) lin->lora = adapters[i];
        if (auto* conv = dynamic_cast<Conv2dImpl*>(targets[i].layer.get()))
            conv->lora = adapters[i];
    }
}

void LoraNetworkImpl::uninstall() {
    for (auto& t : targets) {
        if (auto* lin = dynamic_cast<LinearImpl*>(t.layer.get())) lin->lora = nullptr;
        if (auto* conv = dynamic_cast<Conv2dImpl*>(t.layer.get())) conv->lora = nullptr;
    }
}

void LoraNetworkImpl::merge_into_base() {
    uninstall();
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        torch::Tensor w;
        if (auto* lin = dynamic_cast<LinearImpl*>(targets[i].layer.get())) w = lin->weight;
        if (auto* conv = dynamic_cast<Conv2dImpl*>(targets[i].layer.get())) w = conv->weight;
        if (w.defined()) w.copy_(adapters[i]->weights.merged(w));
    }
}

std::map<std::string, torch::Tensor> LoraNetworkImpl::kohya_state(torch::ScalarType dtype) const {
    std::map<std::string, torch::Tensor> out;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const auto& a = adapters[i]->weights;
        const std::string& key = targets[i].kohya;
        out[key + ".lora_down.weight"] = a.down.detach().to(torch::kCPU, dtype).contiguous();
        out[key + ".lora_up.weight"] = a.up.detach().to(torch::kCPU, dtype).contiguous();
        out[key + ".alpha"] = torch::tensor(static_cast<float>(a.alpha)).to(dtype);
    }
    return out;
}

void LoraNetworkImpl::load_kohya_state(const std::map<std::string, torch::Tensor>& tensors,
                                       const std::string& where) {
    LoadReport r;
    std::set<std::string> used;
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        auto& a = adapters[i]->weights;
        const std::string& kohya = targets[i].kohya;
        for (const auto& [suffix, param] :
             {std::pair<const char*, torch::Tensor>{".lora_down.weight", a.down},
              {".lora_up.weight", a.up}}) {
            const std::string key = kohya + suffix;
            const auto it = tensors.find(key);
            if (it == tensors.end()) {
                r.missing.push_back(key);
                continue;
            }
            used.insert(key);
            if (it->second.sizes() != param.sizes()) {
                r.mismatched.push_back(key + ": file " + shape_text(it->second.sizes()) +
                                       " vs model " + shape_text(param.sizes()));
                continue;
            }
            param.copy_(it->second.to(param.device(), param.scalar_type()));
        }
        const auto alpha = tensors.find(kohya + ".alpha");
        if (alpha != tensors.end()) {
            used.insert(alpha->first);
            if (alpha->second.numel() != 1) {
                r.mismatched.push_back(alpha->first + ": not a scalar");
            } else {
                a.set_alpha(alpha->second.to(torch::kFloat64).item<double>(), options.rslora);
            }
        }
    }
    for (const auto& [name, t] : tensors)
        if (!used.count(name)) r.unexpected.push_back(name);
    if (!r.ok()) throw InputError(where, "LoRA does not match the model: " + r.summary());
}

void LoraNetworkImpl::save_peft(const std::filesystem::path& folder, const std::string& base_model,
                                const std::string& kohya_prefix) const {
    std::vector<std::pair<std::string, const engine::LoraWeights*>> chosen;
    std::set<std::string> names;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const auto& t = targets[i];
        if (!has_prefix(t, kohya_prefix)) continue;
        chosen.emplace_back(t.module, &adapters[i]->weights);
        // The module's own name; "to_out.0" and "net.2" keep their parent's.
        const auto dot = t.module.rfind('.');
        std::string leaf = dot == std::string::npos ? t.module : t.module.substr(dot + 1);
        if ((leaf == "0" || leaf == "2") && dot != std::string::npos && dot > 0)
            leaf = t.module.substr(t.module.rfind('.', dot - 1) + 1);
        names.insert(leaf);
    }
    engine::save_peft_lora(folder, engine::peft_lora_tensors(chosen),
                           engine::peft_lora_config(options, {names.begin(), names.end()},
                                                    base_model, /*task_type=*/""));
}

engine::ParamGroups lora_parameter_groups(LoraNetworkImpl& net, double unet_lr_factor,
                                          double text_encoder_lr_factor) {
    engine::ParamGroup unet, text;
    unet.name = "unet";
    unet.lr_factor = unet_lr_factor;
    text.name = "text_encoder";
    text.lr_factor = text_encoder_lr_factor;
    for (std::size_t i = 0; i < net.targets.size(); ++i) {
        const bool te = is_text_encoder_key(net.targets[i].kohya);
        if (!te && !has_prefix(net.targets[i], "lora_unet"))
            throw Error("LoRA target '" + net.targets[i].kohya +
                        "' is neither UNet nor text encoder");
        for (const auto& p : net.adapters[i]->named_parameters(/*recurse=*/true))
            (te ? text : unet).add(net.targets[i].kohya + "." + p.key(), p.value());
    }
    engine::ParamGroups groups = {std::move(unet)};
    if (!text.params.empty()) groups.push_back(std::move(text));
    return groups;
}

std::string safetensors_data_hash(const std::string& bytes) {
    if (bytes.size() < 8) throw InputError("safetensors", "file shorter than its 8-byte header");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    if (n > bytes.size() - 8) throw InputError("safetensors", "header longer than the file");
    return sha256_hex(std::string_view(bytes).substr(8 + n));
}

std::string save_kohya_lora(const std::filesystem::path& path,
                            const std::map<std::string, torch::Tensor>& tensors,
                            std::map<std::string, std::string> metadata) {
    metadata.erase("sshs_model_hash");
    const std::string draft = engine::save_safetensors_bytes(tensors, metadata);
    const std::string hash = safetensors_data_hash(draft);
    metadata["sshs_model_hash"] = hash;
    const std::string bytes = engine::save_safetensors_bytes(tensors, metadata);
    if (safetensors_data_hash(bytes) != hash) throw Error("LoRA data changed between writes");
    write_file_atomically(path, bytes);
    return hash;
}

}  // namespace crucible::sd
