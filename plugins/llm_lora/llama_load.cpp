#include "plugins/llm_lora/llama_load.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/shape_text.h"
#include "core/engine/safetensors_torch.h"

namespace crucible::llm {
namespace {

struct Llama2cHeader {
    LlamaConfig config;
    bool shared_classifier = true;
    std::uint64_t expected_bytes = 0;
};

Llama2cHeader parse_llama2c_header(const std::filesystem::path& path) {
    const std::string where = path_to_utf8(path);
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw InputError(where, "cannot read the file (" + ec.message() + ")");
    std::ifstream in(path, std::ios::binary);
    std::int32_t h[7] = {};
    if (!in.read(reinterpret_cast<char*>(h), sizeof h))
        throw InputError(where,
                         "too short for a llama2.c header (" + std::to_string(size) + " bytes)");
    std::uint32_t magic = 0;
    std::memcpy(&magic, h, 4);
    if (magic == 0x616b3432u)
        throw InputError(where, "llama2.c version " + std::to_string(h[1]) +
                                    " files are not supported; export the legacy (v0) format");
    Llama2cHeader r;
    LlamaConfig& c = r.config;
    c.hidden_size = h[0];
    c.intermediate_size = h[1];
    c.num_hidden_layers = h[2];
    c.num_attention_heads = h[3];
    c.num_key_value_heads = h[4];
    r.shared_classifier = h[5] > 0;
    c.vocab_size = h[5] < 0 ? -static_cast<std::int64_t>(h[5]) : h[5];
    c.max_position_embeddings = h[6];
    c.rms_norm_eps = 1e-5;
    c.rope_theta = 10000.0;
    c.tie_word_embeddings = r.shared_classifier;
    c.validate(where + ": llama2.c header");
    const std::uint64_t dim = static_cast<std::uint64_t>(c.hidden_size);
    const std::uint64_t hidden = static_cast<std::uint64_t>(c.intermediate_size);
    const std::uint64_t layers = static_cast<std::uint64_t>(c.num_hidden_layers);
    const std::uint64_t head = static_cast<std::uint64_t>(c.head_size());
    const std::uint64_t kv_dim = head * static_cast<std::uint64_t>(c.num_key_value_heads);
    const std::uint64_t vocab = static_cast<std::uint64_t>(c.vocab_size);
    const std::uint64_t seq = static_cast<std::uint64_t>(c.max_position_embeddings);
    std::uint64_t floats = vocab * dim + layers * dim * 2 +
                           layers * (dim * dim * 2 + dim * kv_dim * 2) + layers * hidden * dim * 3 +
                           dim + seq * head;  // freq_cis real + imag: seq * head/2 each
    if (!r.shared_classifier) floats += vocab * dim;
    r.expected_bytes = 28 + floats * 4;
    if (size != r.expected_bytes)
        throw InputError(where, "size " + std::to_string(size) +
                                    " bytes does not match its header (dim " + std::to_string(dim) +
                                    ", " + std::to_string(layers) + " layers, vocab " +
                                    std::to_string(vocab) + "): expected " +
                                    std::to_string(r.expected_bytes) + " bytes");
    return r;
}

}  // namespace

torch::Tensor permute_rotary_to_hf(const torch::Tensor& w, std::int64_t heads) {
    const auto out = w.size(0), in = w.size(1);
    return w.reshape({heads, out / heads / 2, 2, in})
        .transpose(1, 2)
        .reshape({out, in})
        .contiguous();
}

torch::Tensor permute_rotary_to_meta(const torch::Tensor& w, std::int64_t heads) {
    const auto out = w.size(0), in = w.size(1);
    return w.reshape({heads, 2, out / heads / 2, in})
        .transpose(1, 2)
        .reshape({out, in})
        .contiguous();
}

std::map<std::string, torch::Tensor> read_llama2c_tensors(const std::filesystem::path& path,
                                                          LlamaConfig* config_out) {
    const Llama2cHeader header = parse_llama2c_header(path);
    const LlamaConfig& c = header.config;
    const std::string bytes = read_file_bytes_limited(path, header.expected_bytes);
    if (bytes.size() != header.expected_bytes)
        throw InputError(path_to_utf8(path), "changed while being read");
    std::size_t offset = 28;
    auto take = [&](std::vector<std::int64_t> shape) {
        std::int64_t n = 1;
        for (auto d : shape)
            n *= d;
        torch::Tensor t = torch::empty(shape, torch::kFloat32);
        std::memcpy(t.data_ptr<float>(), bytes.data() + offset, static_cast<std::size_t>(n) * 4);
        offset += static_cast<std::size_t>(n) * 4;
        return t;
    };
    const auto dim = c.hidden_size, hidden = c.intermediate_size, layers = c.num_hidden_layers;
    const auto kv_dim = c.head_size() * c.num_key_value_heads;
    std::map<std::string, torch::Tensor> t;
    auto layer_name = [](std::int64_t i, const char* rest) {
        return "model.layers." + std::to_string(i) + "." + rest;
    };
    t["model.embed_tokens.weight"] = take({c.vocab_size, dim});
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "input_layernorm.weight")] = take({dim});
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "self_attn.q_proj.weight")] =
            permute_rotary_to_hf(take({dim, dim}), c.num_attention_heads);
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "self_attn.k_proj.weight")] =
            permute_rotary_to_hf(take({kv_dim, dim}), c.num_key_value_heads);
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "self_attn.v_proj.weight")] = take({kv_dim, dim});
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "self_attn.o_proj.weight")] = take({dim, dim});
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "post_attention_layernorm.weight")] = take({dim});
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "mlp.gate_proj.weight")] = take({hidden, dim});
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "mlp.down_proj.weight")] = take({dim, hidden});
    for (std::int64_t i = 0; i < layers; ++i)
        t[layer_name(i, "mlp.up_proj.weight")] = take({hidden, dim});
    t["model.norm.weight"] = take({dim});
    offset += static_cast<std::size_t>(c.max_position_embeddings * c.head_size()) * 4;  // freq_cis
    if (!header.shared_classifier) t["lm_head.weight"] = take({c.vocab_size, dim});
    if (config_out != nullptr) *config_out = c;
    return t;
}

namespace {

using TensorVisitor =
    std::function<void(const std::string& name, const std::function<torch::Tensor()>& read)>;

// Calls `visit` for every tensor of a Hugging Face folder, shard by shard, one shard mapped at a
// time; `read` gives a view of the tensor's bytes in the mapped file, valid during the call only
// (whoever keeps it copies it). The index's weight_map is checked: each named tensor must be in
// the shard it names.
void visit_hf_tensors(const std::filesystem::path& folder, const TensorVisitor& visit) {
    const auto single = folder / "model.safetensors";
    const auto index = folder / "model.safetensors.index.json";
    if (std::filesystem::exists(index)) {
        const std::string where = path_to_utf8(index);
        const Json j = read_json_file(index);
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw InputError(where, "field 'weight_map': expected an object of tensor -> file");
        std::map<std::string, std::vector<std::string>> by_file;
        for (const auto& [name, file] : j["weight_map"].items()) {
            if (!file.is_string())
                throw InputError(where, "weight_map['" + name + "']: expected a file name");
            const std::string f = file.get<std::string>();
            const auto p = folder / path_from_utf8(f);
            if (f.empty() || path_from_utf8(f).has_parent_path() || !is_path_inside(folder, p))
                throw InputError(where, "weight_map['" + name + "']: file '" + f +
                                            "' is not a file name inside the folder");
            by_file[f].push_back(name);
        }
        for (const auto& [file, names] : by_file) {
            const auto st = SafetensorsFile::open(folder / path_from_utf8(file));
            for (const auto& name : names) {
                const auto* info = st.find(name);
                if (info == nullptr)
                    throw InputError(
                        st.where(),
                        "tensor '" + name + "' is missing (the index puts it in this file)");
                visit(name, [&st, info] { return engine::view_torch(st, *info); });
            }
        }
        return;
    }
    if (!std::filesystem::exists(single))
        throw InputError(path_to_utf8(folder),
                         "no model.safetensors or model.safetensors.index.json in the folder");
    const auto st = SafetensorsFile::open(single);
    for (const auto& info : st.tensors())
        visit(info.name, [&st, &info] { return engine::view_torch(st, info); });
}

// Puts tensors into a model's base parameters one at a time, checking each by name, shape and
// dtype: a missing, unexpected or mis-shaped tensor is an InputError naming it. Each goes to
// `device` / `dtype` (default: the parameter's own); with `nf4`, a decoder projection is
// quantized as soon as its weight is in, so its full-precision copy lives no longer than that.
class BaseWeightSink {
  public:
    BaseWeightSink(LlamaForCausalLmImpl& model, std::string where,
                   std::optional<torch::Device> device = std::nullopt,
                   std::optional<torch::ScalarType> dtype = std::nullopt, bool nf4 = false)
        : model_(model),
          where_(std::move(where)),
          device_(device),
          dtype_(dtype),
          nf4_(nf4),
          params_(model.base_state_dict()) {
        for (auto& [name, proj] : model.projections())
            projections_.emplace(name + ".weight", proj);
    }

    void put(const std::string& name, const std::function<torch::Tensor()>& read) {
        seen_.push_back(name);
        const auto it = params_.find(name);
        if (it == params_.end()) {
            const bool inv_freq = name.size() > 21 && name.ends_with(".rotary_emb.inv_freq");
            const bool tied_head = name == "lm_head.weight" && model_.config.tie_word_embeddings;
            if (inv_freq || tied_head) return;
            throw InputError(where_, "unexpected tensor '" + name +
                                         "': this Llama config has no such parameter (another "
                                         "architecture, or a config.json that does not match?)");
        }
        torch::Tensor& param = it->second;
        const auto proj = nf4_ ? projections_.find(name) : projections_.end();
        const torch::Device device = device_.value_or(param.device());
        const torch::ScalarType dtype = dtype_.value_or(param.scalar_type());
        if (proj != projections_.end()) proj->second->reserve_nf4(device);
        const torch::Tensor value = read();
        if (value.sizes() != param.sizes())
            throw InputError(where_, "tensor '" + name + "' has shape " +
                                         shape_text(value.sizes()) + ", expected " +
                                         shape_text(param.sizes()));
        if (!value.is_floating_point())
            throw InputError(where_, "tensor '" + name + "' has a non-floating dtype");
        loaded_.insert(name);
        if (proj != projections_.end()) {
            // Quantized straight from the file's bytes (on a GPU, from their one upload): the
            // dense weight is never a tensor of this process's own.
            proj->second->quantize_nf4_from(value.to(device), dtype);
            return;
        }
        torch::NoGradGuard no_grad;
        param.set_data(value.to(device, dtype, /*non_blocking=*/false, /*copy=*/true));
    }

    void finish() const {
        for (const auto& [name, param] : params_)
            if (!loaded_.contains(name))
                throw InputError(where_, "missing tensor '" + name + "' (expected shape " +
                                             shape_text(param.sizes()) + "; the file has " +
                                             name_list() + ")");
    }

  private:
    std::string name_list() const {
        std::string s;
        for (std::size_t i = 0; i < seen_.size(); ++i) {
            if (i == 5) return s + ", ...";
            s += (s.empty() ? "" : ", ") + seen_[i];
        }
        return s;
    }

    LlamaForCausalLmImpl& model_;
    std::string where_;
    std::optional<torch::Device> device_;
    std::optional<torch::ScalarType> dtype_;
    bool nf4_;
    std::map<std::string, torch::Tensor> params_;
    std::map<std::string, LoraLinear> projections_;
    std::vector<std::string> seen_;
    std::set<std::string> loaded_;
};

LlamaConfig read_hf_config(const std::filesystem::path& folder) {
    const auto config_path = folder / "config.json";
    if (!std::filesystem::exists(config_path))
        throw InputError(path_to_utf8(folder), "no config.json in the folder");
    return LlamaConfig::from_hf_json(read_json_file(config_path), path_to_utf8(config_path));
}

void require_model_path(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw InputError(path_to_utf8(path),
                         "does not exist (expected a Hugging Face folder or a llama2.c .bin)");
}

}  // namespace

std::map<std::string, torch::Tensor> read_hf_tensors(const std::filesystem::path& folder) {
    std::map<std::string, torch::Tensor> out;
    visit_hf_tensors(
        folder, [&](const std::string& name, const auto& read) { out[name] = read().clone(); });
    return out;
}

std::map<std::string, torch::Tensor> read_base_model(const std::filesystem::path& path,
                                                     LlamaConfig& config) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        config = read_hf_config(path);
        return read_hf_tensors(path);
    }
    require_model_path(path);
    return read_llama2c_tensors(path, &config);
}

LlamaConfig read_base_config(const std::filesystem::path& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return read_hf_config(path);
    require_model_path(path);
    return parse_llama2c_header(path).config;
}

LlamaForCausalLm load_base_model(const std::filesystem::path& path, const BaseModelLoad& how) {
    const LlamaConfig config = read_base_config(path);
    LlamaForCausalLm model(config, WeightInit::Empty);
    BaseWeightSink sink(*model, path_to_utf8(path), how.device, how.dtype, how.nf4);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        visit_hf_tensors(path,
                         [&](const std::string& name, const auto& read) { sink.put(name, read); });
    } else {
        for (const auto& [name, tensor] : read_llama2c_tensors(path))
            sink.put(name, [&tensor] { return tensor; });
    }
    sink.finish();
    model->to(how.device);  // the buffers (rotary frequencies); parameters are there already
    return model;
}

void assign_base_weights(LlamaForCausalLmImpl& model,
                         const std::map<std::string, torch::Tensor>& tensors,
                         const std::string& where) {
    BaseWeightSink sink(model, where);
    for (const auto& [name, tensor] : tensors)
        sink.put(name, [&tensor] { return tensor; });
    sink.finish();
}

void save_hf_folder(LlamaForCausalLmImpl& model, const std::filesystem::path& folder,
                    torch::ScalarType dtype, std::uint64_t max_shard_bytes) {
    if (dtype != torch::kFloat32 && dtype != torch::kFloat16 && dtype != torch::kBFloat16)
        throw InputError("dtype", "merged weights are written as F32, F16 or BF16");
    std::filesystem::create_directories(folder);
    // Projections are written merged (base + LoRA delta); every other tensor as it is.
    std::map<std::string, torch::Tensor> tensors;
    for (auto& [name, proj] : model.projections())
        tensors[name + ".weight"] = proj->merged_weight().to(torch::kCPU, dtype).contiguous();
    for (const auto& [name, param] : model.base_state_dict())
        if (!tensors.contains(name))
            tensors[name] = param.detach().to(torch::kCPU, dtype).contiguous();
    Json config = model.config.to_hf_json();
    config["torch_dtype"] = dtype == torch::kFloat32   ? "float32"
                            : dtype == torch::kFloat16 ? "float16"
                                                       : "bfloat16";
    const std::map<std::string, std::string> meta{{"format", "pt"}};
    // Shards in name order, each closed before it would pass the limit.
    std::vector<std::map<std::string, torch::Tensor>> shards(1);
    std::uint64_t bytes = 0, total = 0;
    for (const auto& [name, t] : tensors) {
        const auto n = static_cast<std::uint64_t>(t.numel() * t.element_size());
        if (max_shard_bytes > 0 && bytes > 0 && bytes + n > max_shard_bytes) {
            shards.emplace_back();
            bytes = 0;
        }
        shards.back()[name] = t;
        bytes += n;
        total += n;
    }
    if (shards.size() == 1) {
        engine::save_safetensors(folder / "model.safetensors", shards[0], meta);
        std::filesystem::remove(folder / "model.safetensors.index.json");
    } else {
        Json index;
        index["metadata"] = {{"total_size", total}};
        index["weight_map"] = Json::object();
        const auto n = shards.size();
        for (std::size_t i = 0; i < n; ++i) {
            char file[64];
            std::snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors", i + 1, n);
            engine::save_safetensors(folder / file, shards[i], meta);
            for (const auto& [name, t] : shards[i])
                index["weight_map"][name] = file;
        }
        write_json_file(folder / "model.safetensors.index.json", index);
        std::filesystem::remove(folder / "model.safetensors");
    }
    write_json_file(folder / "config.json", config);
}

}  // namespace crucible::llm
