#include "core/data/chat_template.h"

#include "core/base/error.h"

namespace crucible::data {
namespace {

std::string trim(const std::string& s) {
    const char* ws = " \t\n\r\f\v";
    const auto b = s.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

class Builder {
  public:
    void add(const std::string& text, bool response) {
        if (text.empty()) return;
        if (!out_.empty() && out_.back().response == response)
            out_.back().text += text;
        else
            out_.push_back({text, response});
    }
    std::vector<TemplateSegment> take() { return std::move(out_); }

  private:
    std::vector<TemplateSegment> out_;
};

const char* kAlpacaWithInput =
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request.\n\n";
const char* kAlpacaNoInput =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n";

}  // namespace

const std::vector<std::string>& chat_template_names() {
    static const std::vector<std::string> names{"llama-3", "chatml", "alpaca", "mistral"};
    return names;
}

ChatTemplate parse_chat_template(const std::string& name) {
    if (name == "llama-3" || name == "llama3") return ChatTemplate::Llama3;
    if (name == "chatml") return ChatTemplate::ChatMl;
    if (name == "alpaca") return ChatTemplate::Alpaca;
    if (name == "mistral") return ChatTemplate::Mistral;
    throw InputError("template", "unknown chat template '" + name +
                                     "' (known: llama-3, chatml, alpaca, mistral)");
}

std::optional<ChatTemplate> detect_chat_template(const std::string& jinja) {
    const auto has = [&](const char* marker) { return jinja.find(marker) != std::string::npos; };
    if (has("<|start_header_id|>") && has("<|eot_id|>")) return ChatTemplate::Llama3;
    if (has("<|im_start|>") && has("<|im_end|>")) return ChatTemplate::ChatMl;
    if (has("[INST]") && has("[/INST]")) return ChatTemplate::Mistral;
    return std::nullopt;
}

const char* chat_template_name(ChatTemplate t) {
    switch (t) {
        case ChatTemplate::Llama3:
            return "llama-3";
        case ChatTemplate::ChatMl:
            return "chatml";
        case ChatTemplate::Alpaca:
            return "alpaca";
        case ChatTemplate::Mistral:
            return "mistral";
    }
    return "?";
}

std::vector<TemplateSegment> render_chat(const std::vector<ChatMessage>& messages, ChatTemplate t,
                                         const TemplateOptions& options,
                                         const AlpacaFields* alpaca) {
    Builder b;
    std::size_t first = 0;
    std::string system;
    if (!messages.empty() && messages[0].role == ChatRole::System) {
        system = messages[0].content;
        first = 1;
    }
    switch (t) {
        case ChatTemplate::Llama3: {
            b.add("<|begin_of_text|>", false);
            for (const auto& m : messages) {
                b.add(std::string("<|start_header_id|>") + chat_role_name(m.role) +
                          "<|end_header_id|>\n\n",
                      false);
                const bool r = m.role == ChatRole::Assistant;
                b.add(trim(m.content) + "<|eot_id|>", r);
            }
            if (options.add_generation_prompt)
                b.add("<|start_header_id|>assistant<|end_header_id|>\n\n", false);
            break;
        }
        case ChatTemplate::ChatMl: {
            for (const auto& m : messages) {
                b.add(std::string("<|im_start|>") + chat_role_name(m.role) + "\n", false);
                const bool r = m.role == ChatRole::Assistant;
                b.add(m.content + "<|im_end|>", r);
                b.add("\n", false);
            }
            if (options.add_generation_prompt) b.add("<|im_start|>assistant\n", false);
            break;
        }
        case ChatTemplate::Alpaca: {
            const bool single = alpaca != nullptr && messages.size() - first <= 2;
            const bool with_input = single && !alpaca->input.empty();
            b.add(!system.empty() ? system + "\n\n"
                  : with_input    ? kAlpacaWithInput
                                  : kAlpacaNoInput,
                  false);
            for (std::size_t i = first; i < messages.size(); ++i) {
                const auto& m = messages[i];
                if (m.role == ChatRole::User) {
                    if (single && with_input)
                        b.add("### Instruction:\n" + alpaca->instruction + "\n\n### Input:\n" +
                                  alpaca->input + "\n\n### Response:\n",
                              false);
                    else
                        b.add("### Instruction:\n" + m.content + "\n\n### Response:\n", false);
                } else if (m.role == ChatRole::Assistant) {
                    b.add(m.content + options.eos_token, true);
                    if (i + 1 < messages.size()) b.add("\n\n", false);
                } else {
                    throw InputError("template", "alpaca: a system message may only come first");
                }
            }
            break;
        }
        case ChatTemplate::Mistral: {
            b.add("<s>", false);
            for (std::size_t i = first; i < messages.size(); ++i) {
                const auto& m = messages[i];
                if (m.role == ChatRole::User) {
                    const std::string text =
                        i == first && !system.empty() ? system + "\n\n" + m.content : m.content;
                    b.add("[INST] " + text + " [/INST]", false);
                } else if (m.role == ChatRole::Assistant) {
                    b.add(m.content + "</s>", true);
                } else {
                    throw InputError("template", "mistral: a system message may only come first");
                }
            }
            break;
        }
    }
    return b.take();
}

std::vector<TemplateSegment> render_chat(const ChatSample& sample, ChatTemplate t,
                                         const TemplateOptions& options) {
    return render_chat(sample.messages, t, options, sample.alpaca ? &*sample.alpaca : nullptr);
}

std::string join_segments(const std::vector<TemplateSegment>& segments) {
    std::string s;
    for (const auto& seg : segments)
        s += seg.text;
    return s;
}

}  // namespace crucible::data
