#pragma once
// Chat templates: the text a model's own chat template produces for a conversation, cut into
// segments that say which part is the response (loss is taken on responses only by default).
//
//   llama-3  <|begin_of_text|> then per message
//            <|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|>
//            (response segment: the assistant content and its <|eot_id|>)
//   chatml   per message <|im_start|>{role}\n{content}<|im_end|>\n
//            (response: the assistant content and <|im_end|>)
//   alpaca   the Stanford Alpaca prompt ("Below is an instruction that describes a task...",
//            "### Instruction:\n", "### Input:\n", "### Response:\n") and the output followed by
//            the end-of-text token; later turns repeat the Instruction/Response blocks
//   mistral  <s>[INST] {user} [/INST]{assistant}</s>[INST] ... (Mistral-Instruct v0.1; a system
//            message is put before the first user message, separated by a blank line)
// The end-of-text spelling of alpaca is a parameter (`</s>` for Llama 1/2, `<|end_of_text|>`
// for Llama 3).
#include <optional>
#include <string>
#include <vector>

#include "core/data/chat_dataset.h"

namespace crucible::data {

enum class ChatTemplate { Llama3, ChatMl, Alpaca, Mistral };

// "llama-3" (also "llama3"), "chatml", "alpaca", "mistral"; InputError("template", ...) naming
// the known ones otherwise.
ChatTemplate parse_chat_template(const std::string& name);
const char* chat_template_name(ChatTemplate t);
const std::vector<std::string>& chat_template_names();

// Which of our templates a model's own Jinja chat template (tokenizer_config.json's
// "chat_template") writes, told by the markers it emits: <|start_header_id|> is llama-3,
// <|im_start|> chatml (Qwen2; Qwen3's adds <think> blocks only to generation prompts and
// reasoning turns), [INST] mistral. nullopt for any other template (we do not run Jinja).
std::optional<ChatTemplate> detect_chat_template(const std::string& jinja);

struct TemplateSegment {
    std::string text;
    bool response = false;  // part of an assistant turn: loss is taken here
};

struct TemplateOptions {
    // Append the assistant header after the last message (for generation prompts).
    bool add_generation_prompt = false;
    std::string eos_token = "</s>";  // alpaca's end-of-text marker
};

// The segments of a conversation (roles as in ChatSample::messages; the last message may be a
// user message when add_generation_prompt is set). Adjacent segments of the same kind are
// merged. Throws InputError("template", ...) when the template cannot express the messages.
std::vector<TemplateSegment> render_chat(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                         const TemplateOptions& options = {},
                                         const AlpacaFields* alpaca = nullptr);
std::vector<TemplateSegment> render_chat(const ChatSample& sample, ChatTemplate t,
                                         const TemplateOptions& options = {});
// The concatenated text.
std::string join_segments(const std::vector<TemplateSegment>& segments);

}  // namespace crucible::data
