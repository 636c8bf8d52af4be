// alpaca / sharegpt parsing (valid and hostile rows) and the chat templates' exact text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/chat_dataset.h"
#include "core/data/chat_template.h"
#include "tests/support/temp_dir.h"

namespace crucible::data {
namespace {

TEST(ChatDataset, AlpacaJsonlAndJsonArray) {
    const std::string jsonl =
        "{\"instruction\":\"Add\",\"input\":\"2 3\",\"output\":\"5\"}\n"
        "\n"
        "{\"instruction\":\"Say hi\",\"output\":\"hi\",\"system\":\"Be brief.\"}\r\n"
        "{\"instruction\":\"Q2\",\"output\":\"A2\",\"history\":[[\"Q1\",\"A1\"]]}\n";
    const auto r = parse_chat_dataset(jsonl, "a.jsonl");
    ASSERT_TRUE(r.ok()) << r.problems[0].what;
    EXPECT_EQ(r.format, ChatFormat::Alpaca);
    ASSERT_EQ(r.samples.size(), 3u);
    EXPECT_EQ(r.samples[0].where, "a.jsonl:1");
    EXPECT_EQ(r.samples[1].where, "a.jsonl:3");
    EXPECT_EQ(r.samples[0].messages[0].content, "Add\n\n2 3");
    ASSERT_TRUE(r.samples[0].alpaca.has_value());
    EXPECT_EQ(r.samples[0].alpaca->input, "2 3");
    EXPECT_EQ(r.samples[1].messages[0].role, ChatRole::System);
    EXPECT_EQ(r.samples[2].messages.size(), 4u);
    EXPECT_FALSE(r.samples[2].alpaca.has_value());

    const auto a = parse_chat_dataset("[{\"instruction\":\"x\",\"output\":\"y\"}]", "a.json");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a.samples[0].where, "a.json: row 1");
}

TEST(ChatDataset, ShareGptAndOpenAiMessages) {
    const std::string jsonl =
        "{\"conversations\":[{\"from\":\"system\",\"value\":\"S\"},{\"from\":\"human\",\"value\":"
        "\"你好\"},{\"from\":\"gpt\",\"value\":\"嗨 👋\"},{\"from\":\"human\",\"value\":\"more\"},"
        "{\"from\":\"gpt\",\"value\":\"ok\"}]}\n"
        "{\"messages\":[{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"assistant\",\"content\":"
        "\"a\"}]}\n";
    const auto r = parse_chat_dataset(jsonl, "s.jsonl");
    ASSERT_TRUE(r.ok()) << r.problems[0].what;
    EXPECT_EQ(r.format, ChatFormat::ShareGpt);
    ASSERT_EQ(r.samples.size(), 2u);
    EXPECT_EQ(r.samples[0].messages.size(), 5u);
    EXPECT_EQ(r.samples[0].messages[2].content, "嗨 👋");
    EXPECT_EQ(r.samples[1].messages[1].role, ChatRole::Assistant);
}

TEST(ChatDataset, HostileRowsAreReportedWithLineNumbers) {
    struct Case {
        std::string name, text, where, what;
    };
    const std::string ok = "{\"instruction\":\"i\",\"output\":\"o\"}\n";
    const std::vector<Case> cases{
        {"empty file", "", "f.jsonl", "empty"},
        {"only blank lines", "\n \n\r\n", "f.jsonl", "empty"},
        {"broken JSON line", ok + "{\"instruction\":\"i\",\n", "f.jsonl:2", "invalid JSON"},
        {"truncated JSON array", "[{\"instruction\":\"i\",\n\"output\":", "f.jsonl:2",
         "invalid JSON"},
        {"not an object", ok + "[1,2]\n", "f.jsonl:2", "expected an object"},
        {"number instruction", ok + "{\"instruction\":5,\"output\":\"o\"}\n", "f.jsonl:2",
         "field 'instruction': expected a string, got number"},
        {"missing output", ok + "{\"instruction\":\"i\"}\n", "f.jsonl:2", "missing field 'output'"},
        {"unknown fields", "{\"text\":\"t\"}\n", "f.jsonl:1", "neither alpaca"},
        {"format switches", ok + "{\"conversations\":[]}\n", "f.jsonl:2",
         "missing field 'instruction'"},
        {"non-UTF-8 line", ok + "{\"instruction\":\"\xff\xfe\",\"output\":\"o\"}\n", "f.jsonl:2",
         "not valid UTF-8"},
        {"bad role", "{\"conversations\":[{\"from\":\"bot\",\"value\":\"x\"}]}\n", "f.jsonl:1",
         "unknown role 'bot'"},
        {"turns out of order",
         "{\"conversations\":[{\"from\":\"gpt\",\"value\":\"x\"},{\"from\":\"human\",\"value\":"
         "\"y\"}]}\n",
         "f.jsonl:1", "turn 1 is assistant, expected user"},
        {"no answer", "{\"conversations\":[{\"from\":\"human\",\"value\":\"y\"}]}\n", "f.jsonl:1",
         "no response"},
        {"turn not an object", "{\"conversations\":[\"hi\"]}\n", "f.jsonl:1",
         "conversations[0]: expected an object"},
        {"value null", "{\"conversations\":[{\"from\":\"human\",\"value\":null}]}\n", "f.jsonl:1",
         "missing field 'value'"},
        {"history wrong shape", "{\"instruction\":\"i\",\"output\":\"o\",\"history\":[[\"q\"]]}\n",
         "f.jsonl:1", "field 'history' item 1"},
        {"huge nesting", std::string(5000, '['), "f.jsonl:1", "invalid JSON"},
        {"late system turn",
         "{\"conversations\":[{\"from\":\"human\",\"value\":\"y\"},{\"from\":\"system\",\"value\":"
         "\"s\"}]}\n",
         "f.jsonl:1", "system turn may only come first"},
    };
    for (const auto& c : cases) {
        const auto r = parse_chat_dataset(c.text, "f.jsonl");
        ASSERT_FALSE(r.ok()) << c.name;
        const auto& p = r.problems.front();
        EXPECT_EQ(p.where, c.where) << c.name << ": " << p.what;
        EXPECT_NE(p.what.find(c.what), std::string::npos) << c.name << ": " << p.what;
        EXPECT_THROW(throw_if_errors(r, "data"), InputError) << c.name;
    }
}

TEST(ChatDataset, ManyBadRowsAreCountedNotListed) {
    std::string text;
    for (int i = 0; i < 50; ++i)
        text += "nope\n";
    ChatLoadOptions o;
    o.max_problems = 10;
    const auto r = parse_chat_dataset(text, "f.jsonl", o);
    ASSERT_EQ(r.problems.size(), 11u);
    EXPECT_NE(r.problems.back().what.find("40 more"), std::string::npos);
}

TEST(ChatDataset, FileWithChineseNameAndBom) {
    const test_support::TempDir scratch("chat");
    const std::filesystem::path dir = scratch.path();
    const auto path = dir / path_from_utf8("数据.jsonl");
    std::ofstream(path, std::ios::binary)
        << "\xEF\xBB\xBF{\"instruction\":\"i\",\"output\":\"o\"}\n";
    const auto r = load_chat_dataset(path);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.samples[0].where, path_to_utf8(path) + ":1");
    EXPECT_THROW(load_chat_dataset(dir / "missing.jsonl"), InputError);
    std::filesystem::remove_all(dir);
}

std::vector<ChatMessage> conversation() {
    return {{ChatRole::System, "You are kind."},
            {ChatRole::User, " Hi "},
            {ChatRole::Assistant, "Hello!"},
            {ChatRole::User, "Bye"},
            {ChatRole::Assistant, "Bye."}};
}

std::string response_text(const std::vector<TemplateSegment>& s) {
    std::string r;
    for (const auto& seg : s)
        if (seg.response) r += seg.text + "|";
    return r;
}

TEST(ChatTemplate, Llama3) {
    const auto s = render_chat(conversation(), ChatTemplate::Llama3);
    EXPECT_EQ(
        join_segments(s),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are kind.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nBye.<|eot_id|>");
    EXPECT_EQ(response_text(s), "Hello!<|eot_id|>|Bye.<|eot_id|>|");
    auto prompt = conversation();
    prompt.resize(2);
    TemplateOptions o;
    o.add_generation_prompt = true;
    EXPECT_TRUE(join_segments(render_chat(prompt, ChatTemplate::Llama3, o))
                    .ends_with("Hi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"));
}

TEST(ChatTemplate, ChatMl) {
    const auto s = render_chat(conversation(), ChatTemplate::ChatMl);
    EXPECT_EQ(join_segments(s),
              "<|im_start|>system\nYou are kind.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
              "<|im_start|>assistant\nBye.<|im_end|>\n");
    EXPECT_EQ(response_text(s), "Hello!<|im_end|>|Bye.<|im_end|>|");
}

TEST(ChatTemplate, AlpacaReproducesTheStanfordPrompt) {
    const auto r = parse_chat_dataset(
        "{\"instruction\":\"Add the numbers.\",\"input\":\"2 and 3\",\"output\":\"5\"}\n"
        "{\"instruction\":\"Name a color.\",\"output\":\"Blue\"}\n",
        "a.jsonl");
    ASSERT_TRUE(r.ok());
    const auto s = render_chat(r.samples[0], ChatTemplate::Alpaca);
    EXPECT_EQ(join_segments(s),
              "Below is an instruction that describes a task, paired with an input that provides "
              "further context. Write a response that appropriately completes the request.\n\n"
              "### Instruction:\nAdd the numbers.\n\n### Input:\n2 and 3\n\n### Response:\n5</s>");
    EXPECT_EQ(response_text(s), "5</s>|");
    TemplateOptions o;
    o.eos_token = "<|end_of_text|>";
    EXPECT_EQ(join_segments(render_chat(r.samples[1], ChatTemplate::Alpaca, o)),
              "Below is an instruction that describes a task. Write a response that appropriately "
              "completes the request.\n\n### Instruction:\nName a color.\n\n### Response:\nBlue"
              "<|end_of_text|>");
}

TEST(ChatTemplate, Mistral) {
    const auto s = render_chat(conversation(), ChatTemplate::Mistral);
    EXPECT_EQ(join_segments(s),
              "<s>[INST] You are kind.\n\n Hi  [/INST]Hello!</s>[INST] Bye [/INST]Bye.</s>");
    EXPECT_EQ(response_text(s), "Hello!</s>|Bye.</s>|");
}

// [B2 8/8] template=auto: the models' own Jinja templates (abridged from their
// tokenizer_config.json files) are told apart by what they emit.
TEST(ChatTemplate, ModelsOwnTemplatesAreRecognizedByTheirMarkers) {
    const std::string llama3 =
        "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
        "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ "
        "message['content'] | trim + '<|eot_id|>' %}{{ content }}{% endfor %}";
    const std::string qwen3 =
        "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + "
        "message.content + '<|im_end|>' + '\n' }}{%- endfor %}{%- if add_generation_prompt %}"
        "{{- '<|im_start|>assistant\n<think>\n\n</think>\n\n' }}{%- endif %}";
    const std::string mistral =
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ "
        "'[INST] ' + message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + "
        "eos_token}}{% endif %}{% endfor %}";
    const std::string gemma =
        "{% for message in messages %}{{ '<start_of_turn>' + message['role'] + '\n' + "
        "message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}";
    EXPECT_EQ(detect_chat_template(llama3), ChatTemplate::Llama3);
    EXPECT_EQ(detect_chat_template(qwen3), ChatTemplate::ChatMl);
    EXPECT_EQ(detect_chat_template(mistral), ChatTemplate::Mistral);
    EXPECT_EQ(detect_chat_template(gemma), std::nullopt);
    EXPECT_EQ(detect_chat_template(""), std::nullopt);
    EXPECT_EQ(detect_chat_template("<|im_start|> alone"), std::nullopt);
}

TEST(ChatTemplate, NamesAreChecked) {
    EXPECT_EQ(parse_chat_template("llama3"), ChatTemplate::Llama3);
    try {
        parse_chat_template("vicuna");
        ADD_FAILURE();
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "template");
        EXPECT_NE(std::string(e.what()).find("chatml"), std::string::npos);
    }
}

}  // namespace
}  // namespace crucible::data
