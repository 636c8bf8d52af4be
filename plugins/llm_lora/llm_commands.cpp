// `crucible llm tokenize tokenizer=DIR text=... [special=true] [template=NAME messages=FILE]`:
// prints the ids (and the rendered chat template) as JSON, so users can check a tokenizer and a
// template against the model's own.
// `crucible llm merge model=BASE adapter=DIR out=DIR [dtype=fp32|fp16|bf16]`: folds a PEFT
// adapter into its base model and writes the merged weights in Hugging Face layout.
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/options_schema.h"
#include "core/base/utf8.h"
#include "core/data/chat_template.h"
#include "core/engine/task_commands.h"
#include "plugins/llm_lora/chat_batches.h"
#include "plugins/llm_lora/llama_load.h"
#include "plugins/llm_lora/llm_task.h"
#include "plugins/llm_lora/peft_adapter.h"
#include "plugins/llm_lora/tokenizer.h"

namespace crucible::llm {
namespace {

// [{"role": "system"|"user"|"assistant", "content": "..."}, ...]
std::vector<data::ChatMessage> read_messages(const std::filesystem::path& path) {
    const std::string where = path_to_utf8(path);
    const Json j = read_json_file(path);
    if (!j.is_array()) throw InputError(where, "expected a list of {role, content} messages");
    std::vector<data::ChatMessage> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
        const std::string at = where + ": message " + std::to_string(i + 1);
        if (!j[i].is_object()) throw InputError(at, "expected an object");
        const std::string role = get_string(j[i], "role", at);
        data::ChatMessage m;
        if (role == "system")
            m.role = data::ChatRole::System;
        else if (role == "user")
            m.role = data::ChatRole::User;
        else if (role == "assistant")
            m.role = data::ChatRole::Assistant;
        else
            throw InputError(at, "unknown role '" + role + "' (system, user, assistant)");
        m.content = get_string(j[i], "content", at);
        out.push_back(std::move(m));
    }
    return out;
}

OptionSchema tokenize_schema() {
    OptionSchema s("llm tokenize", "Tokenize text or a chat");
    s.add(option_spec("tokenizer", OptionType::Path, "",
                      "tokenizer.json / tokenizer.model or their folder"));
    s.add(option_spec("text", OptionType::String, "", "text to tokenize"));
    s.add(option_spec("special", OptionType::Boolean, false,
                      "add the tokenizer's special tokens (BOS)"));
    s.add(option_spec("template", OptionType::String, "",
                      "chat template: llama-3, chatml, alpaca, mistral"));
    s.add(option_spec("messages", OptionType::Path, "",
                      "JSON list of {role, content} to render with the template"));
    return s;
}

int run_tokenize(const Json& o) {
    const std::string tok_path = o["tokenizer"].get<std::string>();
    if (tok_path.empty()) throw InputError("tokenizer", "is required");
    const auto tok = llm::load_tokenizer(path_from_utf8(tok_path));
    Json out;
    out["tokenizer"] = tok->kind();
    out["vocab_size"] = tok->vocab_size();
    const std::string tmpl = o["template"].get<std::string>();
    if (!tmpl.empty()) {
        const std::string messages = o["messages"].get<std::string>();
        if (messages.empty()) throw InputError("messages", "is required with template=");
        const auto msgs = read_messages(path_from_utf8(messages));
        data::TemplateOptions t;
        t.add_generation_prompt = !msgs.empty() && msgs.back().role != data::ChatRole::Assistant;
        if (!tok->eos_token.empty()) t.eos_token = tok->eos_token;
        const auto segments = data::render_chat(msgs, data::parse_chat_template(tmpl), t);
        const auto tokens = llm::tokenize_segments(segments, *tok, /*train_on_prompt=*/false);
        out["template"] = tmpl;
        out["text"] = data::join_segments(segments);
        out["ids"] = tokens.ids;
        out["labels"] = tokens.labels;
    } else {
        const std::string text = o["text"].get<std::string>();
        out["ids"] = tok->encode(text, o["special"].get<bool>(), true);
    }
    std::vector<std::string> pieces;
    for (auto id : out["ids"].get<std::vector<std::int64_t>>())
        pieces.push_back(utf8_lossy(tok->token_text(id)));
    out["tokens"] = pieces;
    out["count"] = out["ids"].size();
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
}

OptionSchema merge_schema() {
    OptionSchema s("llm merge", "Merge a LoRA adapter into its base model");
    s.add(option_spec("model", OptionType::Path, "",
                      "base model: Hugging Face folder or llama2.c .bin"));
    s.add(option_spec("adapter", OptionType::Path, "",
                      "PEFT adapter folder (adapter_config.json + adapter_model.safetensors)"));
    s.add(option_spec("out", OptionType::Path, "", "output folder (Hugging Face layout)"));
    s.add(option_spec("dtype", OptionType::Choice, "fp32", "dtype of the merged weights", "general",
                      std::nullopt, std::nullopt, {"fp32", "fp16", "bf16"}));
    return s;
}

int run_merge(const Json& o) {
    for (const char* k : {"model", "adapter", "out"})
        if (o[k].get<std::string>().empty()) throw InputError(k, "is required");
    const auto model_path = path_from_utf8(o["model"].get<std::string>());
    auto model = llm::load_base_model(model_path);
    const auto spec =
        llm::load_peft_adapter(*model, path_from_utf8(o["adapter"].get<std::string>()));
    const std::string dt = o["dtype"].get<std::string>();
    const auto dtype = dt == "bf16"   ? torch::kBFloat16
                       : dt == "fp16" ? torch::kFloat16
                                      : torch::kFloat32;
    // Writes the projections merged (base + adapter).
    llm::save_hf_folder(*model, path_from_utf8(o["out"].get<std::string>()), dtype, 4ull << 30);
    std::printf("merged LoRA r=%lld (%zu target kinds) into %s\n",
                static_cast<long long>(spec.rank), spec.targets.size(),
                o["out"].get<std::string>().c_str());
    return 0;
}

engine::RegisterTaskCommand tokenize_command({kLlmTaskId,
                                              "tokenize",
                                              "print the token ids of a text or a chat template",
                                              &tokenize_schema,
                                              &run_tokenize,
                                              {},
                                              {"tokenizer=DIR text=TEXT [special=true]",
                                               "tokenizer=DIR template=NAME messages=FILE"}});
// Merging an adapter into its base is this task's export; `crucible llm merge` says the same.
const std::vector<std::string> kMergeUsage{"model=BASE adapter=DIR out=DIR [dtype=fp32|fp16|bf16]"};
engine::RegisterTaskCommand export_command(
    {kLlmTaskId,
     "export",
     "merge a LoRA adapter into its base model (Hugging Face layout)",
     &merge_schema,
     &run_merge,
     {},
     kMergeUsage});
engine::RegisterTaskCommand merge_command(
    {kLlmTaskId,
     "merge",
     "merge a LoRA adapter into its base model (same as export llm)",
     &merge_schema,
     &run_merge,
     {},
     kMergeUsage});

}  // namespace
}  // namespace crucible::llm
