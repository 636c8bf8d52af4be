// libsentencepiece (Debian's libsentencepiece-dev) in one process with LibTorch, and our
// tokenizer.model layer (plugins/llm_lora/tokenizer_sentencepiece.cpp) against the library
// alone: the library carries its own copy of protobuf-lite beside the torch wheel's statically
// linked protobuf; without special pieces in the text and without BOS our layer must give the
// library's ids and decodes. Models: the golden Llama 2 vocabulary (sentencepiece_model_writer.h)
// and BPE and unigram models, identity and nmt_nfkc, that the library's own trainer writes here.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "plugins/llm_lora/llama_model.h"
#include "plugins/llm_lora/tokenizer.h"
#include "tests/llm_lora/reference_tokenizers.h"
#include "tests/llm_lora/sentencepiece_model_writer.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::llm {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<std::int64_t>;

std::vector<std::string> golden_texts() {
    const Json expected = read_json_file(fs::path(CRUCIBLE_SOURCE_DIR) /
                                         "tests/llm_lora/data/tokenizer_expected.json");
    std::vector<std::string> texts;
    for (const auto& t : expected["texts"])
        texts.push_back(t.get<std::string>());
    return texts;
}

// Golden texts plus harder ones: every script the golden texts lack, combining marks, bytes
// that need byte fallback, spaces of every kind, long runs.
std::vector<std::string> comparison_texts() {
    std::vector<std::string> texts = golden_texts();
    for (const char* t : {"", " ", "x", "ÜNÏCÖDÉ İstanbul ΣΑΣ", "e\xCC\x81 cafe\xCC\x81",
                          "²½Ⅳ٣〇 ①", "한국어 텍스트와 ひらがな カタカナ", "كتاب عربي",
                          "\xF0\x9F\x98\x80\xF0\x9F\x98\x81 x", "tab\there  two  spaces   three",
                          "\xE2\x80\x83"
                          "em\xE3\x80\x80"
                          "ideographic",
                          "<unk> <s> </s>", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                          "ﬁ ﬀ ㎏", "\x01\x02\x7F ctrl"})
        texts.push_back(t);
    return texts;
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_library(const std::string& bytes) {
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = sp->LoadFromSerializedProto(bytes);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return sp;
}

// Ours (special pieces not parsed, no BOS: what libsentencepiece's Encode does) against the
// library, text by text; decodes compared where the text has no control or unknown piece.
int compare(const std::string& name, const std::string& model_bytes,
            const std::vector<std::string>& texts) {
    const auto ours = make_sentencepiece_tokenizer(model_bytes, name);
    const auto lib = load_library(model_bytes);
    EXPECT_EQ(lib->GetPieceSize(), ours->vocab_size()) << name;
    int compared = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        std::vector<int> lib_ids;
        const auto status = lib->Encode(texts[i], &lib_ids);
        EXPECT_TRUE(status.ok()) << status.ToString();
        const Ids want(lib_ids.begin(), lib_ids.end());
        const Ids got = ours->encode(texts[i], false, false);
        if (got != want) {
            std::string both;
            for (auto id : got)
                both += lib->IdToPiece(static_cast<int>(id)) + "(" +
                        std::to_string(lib->GetScore(static_cast<int>(id))) + ") ";
            both += "| library: ";
            for (int id : lib_ids)
                both += lib->IdToPiece(id) + "(" + std::to_string(lib->GetScore(id)) + ") ";
            ADD_FAILURE() << name << " text " << i << ": " << texts[i] << "\nours: " << both;
        }
        bool special = false;
        for (int id : lib_ids)
            special = special || lib->IsControl(id) || lib->IsUnknown(id);
        if (!special) {
            std::string lib_text;
            EXPECT_TRUE(lib->Decode(lib_ids, &lib_text).ok());
            EXPECT_EQ(ours->decode(want), lib_text) << name << " decode " << i;
        }
        ++compared;
    }
    return compared;
}

TEST(LibSentencePiece, SharesAProcessWithLibTorch) {
    // LibTorch first (its protobuf is initialized with libtorch_cpu), then the library parses
    // and writes a model proto (its protobuf-lite), then LibTorch again.
    LlamaConfig c;
    c.vocab_size = 64;
    c.hidden_size = 16;
    c.intermediate_size = 32;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.num_key_value_heads = 2;
    c.max_position_embeddings = 16;
    LlamaForCausalLm model(c);
    torch::NoGradGuard no_grad;
    const auto tokens = torch::arange(8, torch::kLong).unsqueeze(0);
    const torch::Tensor before = model->forward(tokens);
    const test_models::TestModel spec = test_models::llama2_model(
        read_json_file(reference_tokenizer_dir("llama2") / "tokenizer.json"));
    const auto lib = load_library(spec.bytes());
    EXPECT_EQ(lib->GetPieceSize(), 32000);
    EXPECT_FALSE(lib->serialized_model_proto().empty());
    std::vector<std::string> pieces;
    EXPECT_TRUE(lib->Encode("Hello world", &pieces).ok());
    EXPECT_EQ(pieces, (std::vector<std::string>{"▁Hello", "▁world"}));
    EXPECT_TRUE(torch::equal(model->forward(tokens), before));
}

TEST(LibSentencePiece, Llama2GoldenModelGivesOurIds) {
    const auto texts = golden_texts();
    const test_models::TestModel spec = test_models::llama2_model(
        read_json_file(reference_tokenizer_dir("llama2") / "tokenizer.json"));
    EXPECT_EQ(compare("llama2", spec.bytes(), texts), static_cast<int>(texts.size()));
    EXPECT_EQ(compare("llama2 (more texts)", spec.bytes(), comparison_texts()),
              static_cast<int>(comparison_texts().size()));
}

// A model the library's trainer writes from the comparison texts (byte fallback on).
std::string train(const fs::path& dir, const std::string& type, const std::string& normalizer) {
    if (!fs::exists(dir / "corpus.txt")) {
        std::ofstream corpus(dir / "corpus.txt", std::ios::binary);
        const auto texts = comparison_texts();
        for (int round = 0; round < 30; ++round)
            for (const auto& t : texts)
                corpus << t << " " << round << " " << texts[(round * 7) % texts.size()] << "\n";
    }
    std::string model;
    const std::string args = "--input=" + path_to_utf8(dir / "corpus.txt") +
                             " --model_type=" + type +
                             " --vocab_size=700 --hard_vocab_limit=false"
                             " --character_coverage=1.0 --byte_fallback=true"
                             " --normalization_rule_name=" +
                             normalizer;
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &model);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return model;
}

TEST(LibSentencePiece, ModelsItsTrainerWritesGiveOurIds) {
    const fs::path dir = test_support::scratch_dir("libsentencepiece");
    for (const char* type : {"bpe", "unigram"}) {
        for (const char* normalizer : {"identity", "nmt_nfkc"}) {
            const std::string name = std::string(type) + "/" + normalizer;
            const std::string model = train(dir, type, normalizer);
            ASSERT_FALSE(model.empty()) << name;
            // Every text, tabs, newlines and control characters too: the character map the
            // model stores is the one applied (sentencepiece_charsmap.h checks it first).
            EXPECT_EQ(compare(name, model, comparison_texts()),
                      static_cast<int>(comparison_texts().size()))
                << name;
        }
    }
    fs::remove_all(dir);
}

// nmt_nfkc is NFKC plus the trainer's own rules: tabs and newlines become spaces and other
// control characters go. Our reader used to apply ICU's NFKC, which keeps them, so such texts
// got other ids than the library's; the model's map is now what runs.
TEST(LibSentencePiece, NmtNfkcModelsMapTabsAndNewlinesAsTheirCharacterMapSays) {
    const fs::path dir = test_support::scratch_dir("libsentencepiece_nfkc");
    for (const char* type : {"bpe", "unigram"}) {
        const auto tok = make_sentencepiece_tokenizer(train(dir, type, "nmt_nfkc"), type);
        EXPECT_EQ(tok->encode("tab\there"), tok->encode("tab here")) << type;
        EXPECT_EQ(tok->encode("two\nlines\r\n"), tok->encode("two lines")) << type;
        EXPECT_EQ(tok->encode("ctrl\x01\x02 x"), tok->encode("ctrl x")) << type;
        EXPECT_EQ(tok->encode("\xEF\xBD\x81\xEF\xBD\x82"), tok->encode("ab")) << type;  // fullwidth
        // Our layer keeps working on top: a special piece in the text, then a tab.
        const Ids ids = tok->encode("<s>tab\there", true, true);
        ASSERT_GE(ids.size(), 3u);
        EXPECT_EQ(ids[0], 1);
        EXPECT_EQ(ids[1], 1);
        EXPECT_EQ(Ids(ids.begin() + 2, ids.end()), tok->encode("tab here")) << type;
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace crucible::llm
