// `crucible sd inspect LORA.safetensors`: what a kohya LoRA holds (modules, rank, alpha, the ss_*
// metadata, whether sshs_model_hash matches its data).
// `crucible sd convert SRC DST`: an SD 1.x base model between a single-file LDM .safetensors
// checkpoint and a diffusers folder (whichever SRC is, DST becomes the other).
// Training is `crucible train diffusion.sd_lora data=FOLDER model=BASE ...`.
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/options_schema.h"
#include "core/base/safetensors.h"
#include "core/engine/task_commands.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/sd_task.h"

namespace crucible::sd {
namespace {

OptionSchema inspect_schema() {
    OptionSchema s("sd inspect", "Show what a kohya LoRA holds");
    OptionSpec lora = option_spec("lora", OptionType::Path, nullptr, "a kohya LoRA .safetensors");
    lora.required = true;
    s.add(lora);
    return s;
}

OptionSchema convert_schema() {
    OptionSchema s("sd convert", "Convert an SD 1.x base model");
    for (const char* name : {"src", "dst"}) {
        OptionSpec o = option_spec(name, OptionType::Path, nullptr,
                                   std::string(name) == "src"
                                       ? "the model: a single-file .safetensors or diffusers folder"
                                       : "where the other layout goes (must not exist)");
        o.required = true;
        s.add(o);
    }
    return s;
}

int inspect(const Json& options) {
    const std::string lora = options["lora"].get<std::string>();
    const auto path = path_from_utf8(lora);
    const auto file = SafetensorsFile::open(path);
    std::map<std::string, std::pair<std::int64_t, double>> modules;  // key -> rank, alpha
    std::set<std::string> prefixes;
    for (const auto& t : file.tensors()) {
        const auto dot = t.name.find('.');
        if (dot == std::string::npos) continue;
        const std::string key = t.name.substr(0, dot);
        const std::string rest = t.name.substr(dot + 1);
        auto& m = modules[key];
        if (rest == "lora_down.weight" && !t.shape.empty()) m.first = t.shape[0];
        prefixes.insert(key.substr(0, key.find('_', 5)));
    }
    std::printf("%s: %zu tensors, %zu modules\n", lora.c_str(), file.size(), modules.size());
    for (const auto& p : prefixes) {
        std::size_t n = 0;
        std::set<std::int64_t> ranks;
        for (const auto& [key, m] : modules)
            if (key.rfind(p + "_", 0) == 0) {
                ++n;
                ranks.insert(m.first);
            }
        std::string r;
        for (auto v : ranks) {
            if (!r.empty()) r += ',';
            r += std::to_string(v);
        }
        std::printf("  %-10s %zu modules, rank %s\n", p.c_str(), n, r.c_str());
    }
    for (const auto& [k, v] : file.metadata())
        if (k != "ss_tag_frequency" && k != "sshs_model_hash")
            std::printf("  %s = %s\n", k.c_str(), v.c_str());
    const auto it = file.metadata().find("sshs_model_hash");
    if (it != file.metadata().end()) {
        const bool ok = sd::safetensors_data_hash(read_file_bytes(path)) == it->second;
        std::printf("  sshs_model_hash = %s (%s)\n", it->second.c_str(),
                    ok ? "matches" : "DOES NOT MATCH");
        if (!ok) return 1;
    }
    return 0;
}

int convert(const Json& options) {
    const std::string dst_text = options["dst"].get<std::string>();
    const auto src = path_from_utf8(options["src"].get<std::string>());
    const auto dst = path_from_utf8(dst_text);
    if (std::filesystem::exists(dst)) throw InputError(dst_text, "already exists");
    sd::SdModels m = sd::load_sd_models(src);
    if (std::filesystem::is_directory(src))
        sd::save_single_file(dst, m);
    else
        sd::save_diffusers_folder(dst, m);
    std::printf("wrote %s\n", dst_text.c_str());
    return 0;
}

engine::RegisterTaskCommand inspect_command({kSdLoraTaskId,
                                             "inspect",
                                             "show the modules, rank and metadata of a kohya LoRA",
                                             &inspect_schema,
                                             &inspect,
                                             {"lora"},
                                             {"LORA.safetensors"}});
// Converting the base model between its two layouts is this task's export; `crucible sd convert`
// says the same.
const std::vector<std::string> kConvertUsage{
    "SRC DST   (single-file .safetensors <-> diffusers folder, whichever SRC is)"};
engine::RegisterTaskCommand export_command(
    {kSdLoraTaskId,
     "export",
     "convert an SD 1.x model: single-file <-> diffusers folder",
     &convert_schema,
     &convert,
     {"src", "dst"},
     kConvertUsage});
engine::RegisterTaskCommand convert_command({kSdLoraTaskId,
                                             "convert",
                                             "convert an SD 1.x model (same as export sd)",
                                             &convert_schema,
                                             &convert,
                                             {"src", "dst"},
                                             kConvertUsage});

}  // namespace
}  // namespace crucible::sd
