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
#include "core/base/safetensors.h"
#include "core/engine/task_commands.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/sd_task.h"

namespace crucible::sd {
namespace {

int inspect(const std::vector<std::string>& args) {
    if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
        std::printf("usage: crucible sd inspect LORA.safetensors\n");
        return args.size() == 1 ? 0 : 2;
    }
    const auto path = path_from_utf8(args[0]);
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
    std::printf("%s: %zu tensors, %zu modules\n", args[0].c_str(), file.size(), modules.size());
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

int convert(const std::vector<std::string>& args) {
    const bool help = args.size() == 1 && (args[0] == "--help" || args[0] == "-h");
    if (args.size() != 2) {
        std::printf(
            "usage: crucible export sd SRC DST  (single-file .safetensors <-> diffusers "
            "folder; also crucible sd convert)\n");
        return help ? 0 : 2;
    }
    const auto src = path_from_utf8(args[0]);
    const auto dst = path_from_utf8(args[1]);
    if (std::filesystem::exists(dst)) throw InputError(args[1], "already exists");
    sd::SdModels m = sd::load_sd_models(src);
    if (std::filesystem::is_directory(src))
        sd::save_single_file(dst, m);
    else
        sd::save_diffusers_folder(dst, m);
    std::printf("wrote %s\n", args[1].c_str());
    return 0;
}

engine::RegisterTaskCommand inspect_command({kSdLoraTaskId, "inspect",
                                             "show the modules, rank and metadata of a kohya LoRA",
                                             &inspect});
// Converting the base model between its two layouts is this task's export; `crucible sd convert`
// says the same.
engine::RegisterTaskCommand export_command(
    {kSdLoraTaskId, "export", "convert an SD 1.x model: single-file <-> diffusers folder",
     &convert});
engine::RegisterTaskCommand convert_command({kSdLoraTaskId, "convert",
                                             "convert an SD 1.x model (same as export sd)",
                                             &convert});

}  // namespace
}  // namespace crucible::sd
