#include "plugins/sd_lora/checkpoint_io.h"

#include <torch/torch.h>

#include <functional>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/base/shape_text.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/ldm_names.h"
#include "plugins/sd_lora/state_dict.h"

namespace crucible::sd {
namespace fs = std::filesystem;
namespace {

using NameMap = std::function<std::optional<std::string>(const std::string&)>;

bool is_lora_name(const std::string& name) {
    return name.find(".lora.") != std::string::npos;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Copies the tensors `map(name)` of `file` into `module`; records every name used. The VAE's
// LDM attention weights are 1x1 convolutions ([C, C, 1, 1]) where diffusers has Linear [C, C].
void load_mapped(torch::nn::Module& module, const SafetensorsFile& file, const NameMap& map,
                 std::set<std::string>& used) {
    LoadReport report;
    std::vector<std::pair<torch::Tensor, const SafetensorsTensorInfo*>> todo;
    for (auto& item : module.named_parameters(true)) {
        if (is_lora_name(item.key())) continue;
        const auto name = map(item.key());
        if (!name) throw Error("no single-file name for parameter " + item.key());
        const SafetensorsTensorInfo* info = file.find(*name);
        if (!info) {
            report.missing.push_back(*name + " (" + item.key() + ")");
            continue;
        }
        used.insert(*name);
        auto want = item.value().sizes().vec();
        auto have = info->shape;
        if (have != want) {
            auto squeezed = have;
            while (squeezed.size() > want.size() && squeezed.back() == 1)
                squeezed.pop_back();
            if (squeezed != want) {
                report.mismatched.push_back(*name + ": file " + shape_text(have) + " vs model " +
                                            shape_text(want));
                continue;
            }
        }
        todo.emplace_back(item.value(), info);
    }
    if (!report.ok())
        throw InputError(file.where(), "checkpoint does not match the model: " + report.summary());
    torch::NoGradGuard no_grad;
    for (auto& [param, info] : todo)
        param.copy_(engine::to_torch(file, *info)
                        .reshape(param.sizes())
                        .to(param.device(), param.scalar_type()));
}

void check_leftovers(const SafetensorsFile& file, const std::string& prefix,
                     const std::set<std::string>& used) {
    std::vector<std::string> extra;
    for (const auto& t : file.tensors())
        if (t.name.rfind(prefix, 0) == 0 && !used.count(t.name) &&
            t.name.rfind("first_stage_model.loss.", 0) != 0)
            extra.push_back(t.name);
    if (extra.empty()) return;
    LoadReport r;
    r.unexpected = extra;
    throw InputError(file.where(), "checkpoint has tensors the model does not: " + r.summary());
}

// SDXL's second text encoder under its Hugging Face names, from OpenCLIP's layout: q, k and v
// unstacked from in_proj, text_projection transposed. A tensor of no known name is an error.
std::map<std::string, torch::Tensor> open_clip_tensors(const SafetensorsFile& file) {
    const std::string prefix = kSdxlText2Prefix;
    std::map<std::string, torch::Tensor> out;
    std::vector<std::string> unknown;
    for (const auto& t : file.tensors()) {
        if (t.name.rfind(prefix, 0) != 0) continue;
        const std::string name = t.name.substr(prefix.size());
        const auto hf = open_clip_hf_name(name);
        if (!hf) {
            if (name != "logit_scale" && name != "attn_mask") unknown.push_back(t.name);
            continue;
        }
        torch::Tensor v = engine::to_torch(file, t);
        if (hf->transposed) {
            if (v.dim() != 2)
                throw InputError(file.where(), t.name + " is " + shape_text(v.sizes()) +
                                                   ", not a [hidden, projection] matrix");
            v = v.t().contiguous();
        }
        if (!hf->stacked_qkv) {
            out[hf->hf] = v;
            continue;
        }
        if (v.dim() < 1 || v.size(0) % 3 != 0)
            throw InputError(file.where(),
                             t.name + " is " + shape_text(v.sizes()) + ": not q, k and v stacked");
        const auto qkv = v.chunk(3, 0);
        const auto at = hf->hf.rfind("q_proj");
        for (std::size_t i = 0; i < 3; ++i) {
            std::string part = hf->hf;
            part[at] = "qkv"[i];
            out[part] = qkv[i];
        }
    }
    if (!unknown.empty()) {
        LoadReport r;
        r.unexpected = unknown;
        throw InputError(file.where(), "second text encoder: " + r.summary());
    }
    return out;
}

SdModels load_open_single_file(const SafetensorsFile& file, const SdModelConfigs& c,
                               const LoadParts& parts);

// A single file's configs when none are given: SDXL base's for a file with SDXL's label_emb,
// else SD 1.5's.
SdModelConfigs single_file_configs(const SafetensorsFile& file) {
    const bool sdxl = file.find(std::string(kLdmUNetPrefix) + "label_emb.0.0.weight");
    return sdxl ? SdModelConfigs::sdxl() : SdModelConfigs{};
}

Json read_config(const fs::path& folder, const std::string& part) {
    const fs::path p = folder / part / "config.json";
    if (!fs::exists(p))
        throw InputError(path_to_utf8(p), "missing (a diffusers model folder needs it)");
    return read_json_file(p);
}

fs::path weights_file(const fs::path& folder, const std::string& part, const char* stem) {
    for (const std::string& name :
         {std::string(stem) + ".safetensors", std::string(stem) + ".fp16.safetensors"}) {
        const fs::path p = folder / part / name;
        if (fs::exists(p)) return p;
    }
    throw InputError(
        path_to_utf8(folder / part),
        std::string("no ") + stem + ".safetensors (only safetensors weights are read)");
}

// Text-encoder tensors without the position_ids buffer some files carry.
std::map<std::string, torch::Tensor> text_tensors(const SafetensorsFile& file,
                                                  const std::string& prefix) {
    std::map<std::string, torch::Tensor> out;
    for (const auto& t : file.tensors()) {
        if (t.name.rfind(prefix, 0) != 0 || ends_with(t.name, "position_ids")) continue;
        out[t.name.substr(prefix.size())] = engine::to_torch(file, t);
    }
    return out;
}

// Text-encoder tensors under Hugging Face's CLIPTextModel names (text_model.*). Tensors without
// that level are moved under it: older single-file checkpoints drop it, and transformers 5's
// CLIPTextModel has no text_model submodule (its files name embeddings.*, encoder.*,
// final_layer_norm.*).
std::map<std::string, torch::Tensor> under_text_model(
    std::map<std::string, torch::Tensor> tensors) {
    bool flat = !tensors.empty();
    for (const auto& [name, t] : tensors)
        if (name.rfind("text_model.", 0) == 0) flat = false;
    if (!flat) return tensors;
    std::map<std::string, torch::Tensor> renamed;
    for (auto& [name, t] : tensors)
        renamed["text_model." + name] = std::move(t);
    return renamed;
}

ClipTextModel load_text_encoder(const fs::path& folder, const std::string& part) {
    const auto where = path_to_utf8(folder / part / "config.json");
    ClipTextModel model(ClipTextConfig::from_hf_json(read_config(folder, part), where));
    const auto file = SafetensorsFile::open(weights_file(folder, part, "model"));
    load_state_dict(*model, under_text_model(text_tensors(file, "")), file.where());
    return model;
}

// The pad token a tokenizer folder names (tokenizer_config.json, else special_tokens_map.json:
// a string or {"content": ...}); empty when neither names one.
std::string pad_token_of(const fs::path& tok) {
    for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
        const fs::path file = tok / name;
        if (!fs::exists(file)) continue;
        const Json j = read_json_file(file);
        if (!j.is_object() || !j.contains("pad_token") || j["pad_token"].is_null()) continue;
        const Json& pad = j["pad_token"];
        if (pad.is_string()) return pad.get<std::string>();
        if (pad.is_object() && pad.contains("content") && pad["content"].is_string())
            return pad["content"].get<std::string>();
        throw InputError(path_to_utf8(file), "'pad_token' must be a string or {\"content\": ...}");
    }
    return "";
}

}  // namespace

std::optional<ClipTokenizer> load_tokenizer_folder(const fs::path& tok) {
    if (!fs::exists(tok / "vocab.json") || !fs::exists(tok / "merges.txt")) return std::nullopt;
    ClipTokenizer tokenizer = ClipTokenizer::load(tok / "vocab.json", tok / "merges.txt");
    const std::string pad = pad_token_of(tok);
    if (!pad.empty()) tokenizer.set_pad_token(pad, path_to_utf8(tok));
    return tokenizer;
}

namespace {

void save_text_encoder(const fs::path& folder, const std::string& part, ClipTextModelImpl& te) {
    fs::create_directories(folder / part);
    write_json_file(folder / part / "config.json", te.config.to_hf_json());
    engine::save_safetensors(folder / part / "model.safetensors", base_state_dict(te));
}

}  // namespace

SdModelConfigs SdModelConfigs::sdxl() {
    SdModelConfigs c;
    c.unet = UNetConfig::sdxl();
    c.vae.scaling_factor = 0.13025;
    c.text_2 = ClipTextConfig::sdxl_bigg();
    return c;
}

std::map<std::string, std::string> ldm_name_map(const UNetConfig& uc, const VaeConfig& vc) {
    std::map<std::string, std::string> out;
    ParamInitGuard meta(ParamInit::Meta);
    UNet unet(uc);
    AutoencoderKL vae(vc);
    for (const auto& item : unet->named_parameters(true)) {
        const auto n = unet_ldm_name(item.key(), uc.layers_per_block, uc.down_cross_attention);
        out[item.key()] = n ? *n : "";
    }
    for (const auto& item : vae->named_parameters(true)) {
        const auto n =
            vae_ldm_name(item.key(), static_cast<std::int64_t>(vc.block_out_channels.size()));
        out["vae:" + item.key()] = n ? *n : "";
    }
    return out;
}

SdModels load_diffusers_folder(const fs::path& folder, const LoadParts& parts) {
    ParamInitGuard unfilled(ParamInit::Empty);  // every tensor is read (and checked) below
    SdModels m;
    if (parts.unet) {
        const auto where = path_to_utf8(folder / "unet" / "config.json");
        m.unet = UNet(UNetConfig::from_diffusers_json(read_config(folder, "unet"), where));
        const auto file =
            SafetensorsFile::open(weights_file(folder, "unet", "diffusion_pytorch_model"));
        load_state_dict(*m.unet, engine::load_safetensors(file), file.where());
    }
    if (parts.vae) {
        const auto where = path_to_utf8(folder / "vae" / "config.json");
        m.vae = AutoencoderKL(VaeConfig::from_diffusers_json(read_config(folder, "vae"), where));
        const auto file =
            SafetensorsFile::open(weights_file(folder, "vae", "diffusion_pytorch_model"));
        load_state_dict(*m.vae, engine::load_safetensors(file), file.where());
    }
    if (parts.text_encoder) {
        m.text_encoder = load_text_encoder(folder, "text_encoder");
        if (fs::exists(folder / "text_encoder_2" / "config.json"))
            m.text_encoder_2 = load_text_encoder(folder, "text_encoder_2");
    }
    m.tokenizer = load_tokenizer_folder(folder / "tokenizer");
    m.tokenizer_2 = load_tokenizer_folder(folder / "tokenizer_2");
    return m;
}

SdModels load_single_file(const fs::path& path, const SdModelConfigs& c, const LoadParts& parts) {
    return load_open_single_file(SafetensorsFile::open(path), c, parts);
}

namespace {

SdModels load_open_single_file(const SafetensorsFile& file, const SdModelConfigs& c,
                               const LoadParts& parts) {
    ParamInitGuard unfilled(ParamInit::Empty);  // every tensor is read (and checked) below
    SdModels m;
    if (parts.unet) {
        m.unet = UNet(c.unet);
        std::set<std::string> used;
        load_mapped(
            *m.unet, file,
            [&](const std::string& n) {
                return unet_ldm_name(n, c.unet.layers_per_block, c.unet.down_cross_attention);
            },
            used);
        check_leftovers(file, kLdmUNetPrefix, used);
    }
    if (parts.vae) {
        m.vae = AutoencoderKL(c.vae);
        std::set<std::string> used;
        const auto blocks = static_cast<std::int64_t>(c.vae.block_out_channels.size());
        load_mapped(
            *m.vae, file, [&](const std::string& n) { return vae_ldm_name(n, blocks); }, used);
        check_leftovers(file, kLdmVaePrefix, used);
    }
    if (parts.text_encoder) {
        m.text_encoder = ClipTextModel(c.text);
        const std::string prefix = c.text_2 ? kSdxlTextPrefix : kLdmTextPrefix;
        load_state_dict(*m.text_encoder, under_text_model(text_tensors(file, prefix)),
                        file.where() + " (" + prefix + "*)");
        if (c.text_2) {
            m.text_encoder_2 = ClipTextModel(*c.text_2);
            load_state_dict(*m.text_encoder_2, open_clip_tensors(file),
                            file.where() + " (" + kSdxlText2Prefix + "*)");
        }
    }
    return m;
}

}  // namespace

SdModelConfigs read_sd_configs(const fs::path& path) {
    const std::string where = path_to_utf8(path);
    if (fs::is_directory(path)) {
        SdModelConfigs c;
        c.unet = UNetConfig::from_diffusers_json(read_config(path, "unet"),
                                                 path_to_utf8(path / "unet" / "config.json"));
        if (fs::exists(path / "vae" / "config.json"))
            c.vae = VaeConfig::from_diffusers_json(read_config(path, "vae"),
                                                   path_to_utf8(path / "vae" / "config.json"));
        c.text = ClipTextConfig::from_hf_json(read_config(path, "text_encoder"),
                                              path_to_utf8(path / "text_encoder" / "config.json"));
        if (fs::exists(path / "text_encoder_2" / "config.json"))
            c.text_2 =
                ClipTextConfig::from_hf_json(read_config(path, "text_encoder_2"),
                                             path_to_utf8(path / "text_encoder_2" / "config.json"));
        return c;
    }
    if (!fs::exists(path)) throw InputError(where, "no such file or folder");
    return single_file_configs(SafetensorsFile::open(path));
}

SdModels load_sd_models(const fs::path& path, const LoadParts& parts,
                        const std::optional<SdModelConfigs>& configs) {
    const std::string where = path_to_utf8(path);
    if (fs::is_directory(path)) {
        if (fs::exists(path / "model_index.json") || fs::exists(path / "unet" / "config.json"))
            return load_diffusers_folder(path, parts);
        throw InputError(where,
                         "not a diffusers model folder (no model_index.json or unet/config.json)");
    }
    if (!fs::exists(path)) throw InputError(where, "no such file or folder");
    if (path.extension() != ".safetensors")
        throw InputError(where,
                         "base models are read from .safetensors files or diffusers folders "
                         "(.ckpt pickles are not loaded)");
    const auto file = SafetensorsFile::open(path);
    return load_open_single_file(file, configs ? *configs : single_file_configs(file), parts);
}

void save_diffusers_folder(const fs::path& folder, SdModels& m) {
    fs::create_directories(folder);
    Json index = {{"_class_name", "StableDiffusionPipeline"}};
    if (m.unet) {
        fs::create_directories(folder / "unet");
        write_json_file(folder / "unet" / "config.json", m.unet->config.to_diffusers_json());
        engine::save_safetensors(folder / "unet" / "diffusion_pytorch_model.safetensors",
                                 base_state_dict(*m.unet));
        index["unet"] = Json::array({"diffusers", "UNet2DConditionModel"});
    }
    if (m.vae) {
        fs::create_directories(folder / "vae");
        write_json_file(folder / "vae" / "config.json", m.vae->config.to_diffusers_json());
        engine::save_safetensors(folder / "vae" / "diffusion_pytorch_model.safetensors",
                                 base_state_dict(*m.vae));
        index["vae"] = Json::array({"diffusers", "AutoencoderKL"});
    }
    if (m.text_encoder) {
        save_text_encoder(folder, "text_encoder", *m.text_encoder);
        index["text_encoder"] = Json::array({"transformers", "CLIPTextModel"});
    }
    if (m.text_encoder_2) {
        save_text_encoder(folder, "text_encoder_2", *m.text_encoder_2);
        index["text_encoder_2"] = Json::array({"transformers", "CLIPTextModelWithProjection"});
        index["_class_name"] = "StableDiffusionXLPipeline";
    }
    write_json_file(folder / "model_index.json", index);
}

void save_single_file(const fs::path& file, SdModels& m) {
    std::map<std::string, torch::Tensor> out;
    if (m.unet) {
        const auto& c = m.unet->config;
        for (const auto& [name, t] : base_state_dict(*m.unet))
            out[unet_ldm_name(name, c.layers_per_block, c.down_cross_attention).value()] = t;
    }
    if (m.vae) {
        const auto blocks = static_cast<std::int64_t>(m.vae->config.block_out_channels.size());
        for (const auto& [name, t] : base_state_dict(*m.vae)) {
            const std::string ldm = vae_ldm_name(name, blocks).value();
            const bool attn_weight = ldm.find(".mid.attn_1.") != std::string::npos && t.dim() == 2;
            out[ldm] = attn_weight ? t.reshape({t.size(0), t.size(1), 1, 1}) : t;
        }
    }
    const bool sdxl = static_cast<bool>(m.text_encoder_2);
    if (m.text_encoder)
        for (const auto& [name, t] : base_state_dict(*m.text_encoder))
            out[sdxl ? kSdxlTextPrefix + name : text_encoder_ldm_name(name)] = t;
    if (sdxl) {
        // OpenCLIP's layout: q, k and v stacked into in_proj, text_projection transposed.
        const auto state = base_state_dict(*m.text_encoder_2);
        for (const auto& [name, t] : state) {
            const std::string to = kSdxlText2Prefix + open_clip_name(name).value();
            if (name.find(".self_attn.q_proj.") != std::string::npos) {
                auto sibling = [&](const char* which) {
                    std::string n = name;
                    n[n.find(".q_proj.") + 1] = which[0];
                    return state.at(n);
                };
                out[to] = torch::cat({t, sibling("k"), sibling("v")});
            } else if (name.find(".self_attn.k_proj.") == std::string::npos &&
                       name.find(".self_attn.v_proj.") == std::string::npos) {
                out[to] = name == "text_projection.weight" ? t.t().contiguous() : t;
            }
        }
    }
    engine::save_safetensors(file, out);
}

}  // namespace crucible::sd
