#include "plugins/sd_lora/ldm_names.h"

#include <charconv>
#include <system_error>
#include <vector>

namespace crucible::sd {
namespace {

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const auto dot = s.find('.', start);
        parts.push_back(
            s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

std::string join(const std::vector<std::string>& parts, std::size_t from) {
    std::string s;
    for (std::size_t i = from; i < parts.size(); ++i)
        s += (i > from ? "." : "") + parts[i];
    return s;
}

std::optional<std::int64_t> index_of(const std::string& s) {
    if (s.empty() || s.size() > 6) return std::nullopt;
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
    return v;
}

// ResnetBlock2D -> LDM ResBlock
std::optional<std::string> unet_resnet(const std::vector<std::string>& p, std::size_t at) {
    if (p.size() != at + 2) return std::nullopt;
    static const std::pair<const char*, const char*> table[] = {
        {"norm1", "in_layers.0"},  {"conv1", "in_layers.2"},  {"time_emb_proj", "emb_layers.1"},
        {"norm2", "out_layers.0"}, {"conv2", "out_layers.3"}, {"conv_shortcut", "skip_connection"}};
    for (const auto& [from, to] : table)
        if (p[at] == from) return std::string(to) + "." + p[at + 1];
    return std::nullopt;
}

std::optional<std::string> vae_resnet(const std::vector<std::string>& p, std::size_t at) {
    if (p.size() != at + 2) return std::nullopt;
    for (const char* same : {"norm1", "conv1", "norm2", "conv2"})
        if (p[at] == same) return p[at] + "." + p[at + 1];
    if (p[at] == "conv_shortcut") return "nin_shortcut." + p[at + 1];
    return std::nullopt;
}

std::optional<std::string> vae_attention(const std::vector<std::string>& p, std::size_t at) {
    if (p.size() == at + 2) {
        if (p[at] == "group_norm") return "norm." + p[at + 1];
        if (p[at] == "to_q") return "q." + p[at + 1];
        if (p[at] == "to_k") return "k." + p[at + 1];
        if (p[at] == "to_v") return "v." + p[at + 1];
    }
    if (p.size() == at + 3 && p[at] == "to_out" && p[at + 1] == "0") return "proj_out." + p[at + 2];
    return std::nullopt;
}

}  // namespace

std::optional<std::string> unet_ldm_name(const std::string& name, std::int64_t L,
                                         const std::vector<bool>& cross) {
    const auto p = split(name);
    const std::string pre = kLdmUNetPrefix;
    if (p.size() == 2) {
        if (p[0] == "conv_in") return pre + "input_blocks.0.0." + p[1];
        if (p[0] == "conv_norm_out") return pre + "out.0." + p[1];
        if (p[0] == "conv_out") return pre + "out.2." + p[1];
        return std::nullopt;
    }
    if (p.size() == 3 && p[0] == "time_embedding") {
        if (p[1] == "linear_1") return pre + "time_embed.0." + p[2];
        if (p[1] == "linear_2") return pre + "time_embed.2." + p[2];
        return std::nullopt;
    }
    if (p.size() == 3 && p[0] == "add_embedding") {  // SDXL's size and crop conditioning
        if (p[1] == "linear_1") return pre + "label_emb.0.0." + p[2];
        if (p[1] == "linear_2") return pre + "label_emb.0.2." + p[2];
        return std::nullopt;
    }
    if (p.size() < 5 && !(p.size() == 4 && p[0] == "mid_block")) return std::nullopt;
    if (p[0] == "mid_block") {
        const auto j = index_of(p[2]);
        if (!j) return std::nullopt;
        if (p[1] == "resnets" && *j <= 1) {
            const auto r = unet_resnet(p, 3);
            if (!r) return std::nullopt;
            return pre + "middle_block." + std::to_string(*j * 2) + "." + *r;
        }
        if (p[1] == "attentions" && *j == 0) return pre + "middle_block.1." + join(p, 3);
        return std::nullopt;
    }
    const auto i = index_of(p[1]);
    const auto j = index_of(p[3]);
    if (!i || !j) return std::nullopt;
    if (p[0] == "down_blocks") {
        const std::int64_t block = *i * (L + 1) + *j + 1;
        if (p[2] == "resnets" && *j < L) {
            const auto r = unet_resnet(p, 4);
            if (!r) return std::nullopt;
            return pre + "input_blocks." + std::to_string(block) + ".0." + *r;
        }
        if (p[2] == "attentions" && *j < L)
            return pre + "input_blocks." + std::to_string(block) + ".1." + join(p, 4);
        if (p[2] == "downsamplers" && *j == 0 && p.size() == 6 && p[4] == "conv")
            return pre + "input_blocks." + std::to_string((*i + 1) * (L + 1)) + ".0.op." + p[5];
        return std::nullopt;
    }
    if (p[0] == "up_blocks") {
        const std::int64_t block = *i * (L + 1) + *j;
        if (p[2] == "resnets" && *j <= L) {
            const auto r = unet_resnet(p, 4);
            if (!r) return std::nullopt;
            return pre + "output_blocks." + std::to_string(block) + ".0." + *r;
        }
        if (p[2] == "attentions" && *j <= L)
            return pre + "output_blocks." + std::to_string(block) + ".1." + join(p, 4);
        // The upsampler follows the last resnet and its attention, when the block has one.
        if (p[2] == "upsamplers" && *j == 0 && p.size() == 6 && p[4] == "conv") {
            const auto n = static_cast<std::int64_t>(cross.size());
            if (*i >= n) return std::nullopt;
            const bool attn = cross[static_cast<std::size_t>(n - 1 - *i)];
            return pre + "output_blocks." + std::to_string(*i * (L + 1) + L) +
                   (attn ? ".2.conv." : ".1.conv.") + p[5];
        }
        return std::nullopt;
    }
    return std::nullopt;
}

std::optional<std::string> vae_ldm_name(const std::string& name, std::int64_t blocks) {
    const auto p = split(name);
    const std::string pre = kLdmVaePrefix;
    if (p.size() == 2 && (p[0] == "quant_conv" || p[0] == "post_quant_conv")) return pre + name;
    if (p.size() < 3 || (p[0] != "encoder" && p[0] != "decoder")) return std::nullopt;
    const std::string part = pre + p[0] + ".";
    if (p.size() == 3) {
        if (p[1] == "conv_in" || p[1] == "conv_out") return part + p[1] + "." + p[2];
        if (p[1] == "conv_norm_out") return part + "norm_out." + p[2];
        return std::nullopt;
    }
    if (p[1] == "mid_block" && p.size() >= 5) {
        const auto j = index_of(p[3]);
        if (!j) return std::nullopt;
        if (p[2] == "resnets" && *j <= 1) {
            const auto r = vae_resnet(p, 4);
            if (!r) return std::nullopt;
            return part + "mid.block_" + std::to_string(*j + 1) + "." + *r;
        }
        if (p[2] == "attentions" && *j == 0) {
            const auto a = vae_attention(p, 4);
            if (!a) return std::nullopt;
            return part + "mid.attn_1." + *a;
        }
        return std::nullopt;
    }
    if (p.size() < 6) return std::nullopt;
    const auto i = index_of(p[2]);
    const auto j = index_of(p[4]);
    if (!i || !j || *i >= blocks) return std::nullopt;
    std::string block;
    if (p[0] == "encoder" && p[1] == "down_blocks")
        block = part + "down." + std::to_string(*i) + ".";
    else if (p[0] == "decoder" && p[1] == "up_blocks")
        block = part + "up." + std::to_string(blocks - 1 - *i) + ".";
    else
        return std::nullopt;
    if (p[3] == "resnets") {
        const auto r = vae_resnet(p, 5);
        if (!r) return std::nullopt;
        return block + "block." + std::to_string(*j) + "." + *r;
    }
    if (*j == 0 && p.size() == 7 && p[5] == "conv") {
        if (p[3] == "downsamplers" && p[0] == "encoder") return block + "downsample.conv." + p[6];
        if (p[3] == "upsamplers" && p[0] == "decoder") return block + "upsample.conv." + p[6];
    }
    return std::nullopt;
}

std::string text_encoder_ldm_name(const std::string& hf_name) {
    return std::string(kLdmTextPrefix) + hf_name;
}

namespace {

// OpenCLIP text-tower names and their Hugging Face twins: whole tensors, then the parts of a
// resblock (under transformer.resblocks.N. / text_model.encoder.layers.N.).
constexpr std::pair<const char*, const char*> kOpenClipWhole[] = {
    {"token_embedding.weight", "text_model.embeddings.token_embedding.weight"},
    {"positional_embedding", "text_model.embeddings.position_embedding.weight"},
    {"ln_final.weight", "text_model.final_layer_norm.weight"},
    {"ln_final.bias", "text_model.final_layer_norm.bias"}};
constexpr std::pair<const char*, const char*> kOpenClipLayerParts[] = {
    {"attn.out_proj.", "self_attn.out_proj."},
    {"ln_1.", "layer_norm1."},
    {"ln_2.", "layer_norm2."},
    {"mlp.c_fc.", "mlp.fc1."},
    {"mlp.c_proj.", "mlp.fc2."}};

}  // namespace

std::optional<OpenClipName> open_clip_hf_name(const std::string& name) {
    for (const auto& [from, to] : kOpenClipWhole)
        if (name == from) return OpenClipName{to};
    if (name == "text_projection") return OpenClipName{"text_projection.weight", false, true};
    const auto p = split(name);
    // transformer.resblocks.N.<part>...
    if (p.size() < 5 || p[0] != "transformer" || p[1] != "resblocks" || !index_of(p[2]))
        return std::nullopt;
    const std::string layer = "text_model.encoder.layers." + p[2] + ".";
    const std::string rest = join(p, 3);
    if (rest == "attn.in_proj_weight") return OpenClipName{layer + "self_attn.q_proj.weight", true};
    if (rest == "attn.in_proj_bias") return OpenClipName{layer + "self_attn.q_proj.bias", true};
    for (const auto& [from, to] : kOpenClipLayerParts) {
        const std::string f = from;
        if (rest.rfind(f, 0) == 0 && rest.size() > f.size() &&
            rest.find('.', f.size()) == std::string::npos)
            return OpenClipName{layer + to + rest.substr(f.size())};
    }
    return std::nullopt;
}

std::optional<std::string> open_clip_name(const std::string& hf) {
    for (const auto& [open_clip, twin] : kOpenClipWhole)
        if (hf == twin) return std::string(open_clip);
    if (hf == "text_projection.weight") return std::string("text_projection");
    const auto p = split(hf);
    // text_model.encoder.layers.N.<part>...
    if (p.size() < 6 || p[0] != "text_model" || p[1] != "encoder" || p[2] != "layers" ||
        !index_of(p[3]))
        return std::nullopt;
    const std::string block = "transformer.resblocks." + p[3] + ".";
    const std::string rest = join(p, 4);
    for (const char* qkv : {"self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj."})
        if (rest.rfind(qkv, 0) == 0 && p.size() == 7) return block + "attn.in_proj_" + p[6];
    for (const auto& [open_clip, twin] : kOpenClipLayerParts) {
        const std::string t = twin;
        if (rest.rfind(t, 0) == 0 && rest.size() > t.size() &&
            rest.find('.', t.size()) == std::string::npos)
            return block + open_clip + rest.substr(t.size());
    }
    return std::nullopt;
}

}  // namespace crucible::sd
