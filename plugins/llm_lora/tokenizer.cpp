// Tokenizer loading by folder (tokenizer.json preferred, else tokenizer.model).
#include "plugins/llm_lora/tokenizer.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::llm {
namespace {

constexpr std::uint64_t kMaxTokenizerBytes = 512ull << 20;

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path) {
    std::filesystem::path json, model, config;
    if (std::filesystem::is_directory(path)) {
        json = path / "tokenizer.json";
        model = path / "tokenizer.model";
        config = path / "tokenizer_config.json";
        if (!std::filesystem::exists(json)) json.clear();
        if (!std::filesystem::exists(model)) model.clear();
        if (!std::filesystem::exists(config)) config.clear();
        if (json.empty() && model.empty())
            throw InputError(path_to_utf8(path),
                             "no tokenizer.json or tokenizer.model in the folder");
    } else if (path.extension() == ".json") {
        json = path;
        if (std::filesystem::exists(path.parent_path() / "tokenizer_config.json"))
            config = path.parent_path() / "tokenizer_config.json";
    } else {
        model = path;
    }
    if (!json.empty()) {
        const std::string text = read_file_bytes_limited(json, kMaxTokenizerBytes);
        const std::string config_text =
            config.empty() ? std::string() : read_file_bytes_limited(config, 64ull << 20);
        return make_hf_tokenizer(text, path_to_utf8(json), config_text);
    }
    return make_sentencepiece_tokenizer(read_file_bytes_limited(model, kMaxTokenizerBytes),
                                        path_to_utf8(model));
}

}  // namespace crucible::llm
