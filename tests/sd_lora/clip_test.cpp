// CLIP tokenizer (generated vocab/merges) and text encoder (tiny, and the SD 1.5 layout).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "core/base/error.h"
#include "core/data/text/byte_level.h"
#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/clip_tokenizer.h"
#include "plugins/sd_lora/lora.h"
#include "tests/sd_lora/sd_test_util.h"

namespace crucible::sd {
namespace {

ClipTokenizer tiny_tokenizer() {
    return ClipTokenizer::parse(testing::tiny_vocab_json(), testing::tiny_merges_txt());
}

TEST(ClipTokenizer, MergesWordsByRank) {
    const auto t = tiny_tokenizer();
    EXPECT_EQ(
        t.tokenize("A RED  cat, Square!"),
        (std::vector<std::string>{"a</w>", "red</w>", "cat</w>", ",</w>", "square</w>", "!</w>"}));
    EXPECT_EQ(t.tokenize("it's 42"),
              (std::vector<std::string>{"it</w>", "'s</w>", "4</w>", "2</w>"}));
    EXPECT_EQ(t.tokenize("rex"), (std::vector<std::string>{"re", "x</w>"}));
    EXPECT_EQ(t.tokenize("<|startoftext|>red"),
              (std::vector<std::string>{"<|startoftext|>", "red</w>"}));
    EXPECT_TRUE(t.tokenize(" \t\n ").empty());
}

// The words of a text: pieces joined up to each "</w>" and mapped back to their bytes.
std::vector<std::string> words(const ClipTokenizer& t, std::string_view text) {
    std::vector<std::string> out;
    std::string word;
    for (const auto& piece : t.tokenize(text)) {
        if (piece.starts_with("<|")) {
            out.push_back(piece);
        } else if (piece.ends_with("</w>")) {
            word += piece.substr(0, piece.size() - 4);
            out.push_back(data::text::symbols_to_bytes(word));
            word.clear();
        } else {
            word += piece;
        }
    }
    return out;
}

TEST(ClipTokenizer, WordsFollowTheUnicodeClasses) {
    const auto t = tiny_tokenizer();
    // As the reference's \p{L} and \p{N}: a combining accent is no letter, a digit of any
    // script is a word of its own, emoji with their variation selector are one symbol run.
    EXPECT_EQ(words(t, "cafe\xCC\x81 x²½ ٣"),
              (std::vector<std::string>{"cafe", "\xCC\x81", "x", "²", "½", "٣"}));
    EXPECT_EQ(words(t, "❤️ 红色的猫! <|endoftext|>"),
              (std::vector<std::string>{"❤️", "红色的猫", "!", "<|endoftext|>"}));
    // Ill-formed bytes: one U+FFFD per maximal subpart (a cut 中 is one), among the symbols.
    EXPECT_EQ(words(t, "a\xE4\xB8 b\xFF\xFE"),
              (std::vector<std::string>{"a", "\xEF\xBF\xBD", "b", "\xEF\xBF\xBD\xEF\xBF\xBD"}));
}

TEST(ClipTokenizer, EncodesWithSpecialTokensPaddingAndTruncation) {
    const auto t = tiny_tokenizer();
    const auto ids = t.encode("red cat");
    ASSERT_EQ(ids.size(), 77u);
    EXPECT_EQ(ids[0], t.bos_id());
    EXPECT_EQ(ids[3], t.eos_id());
    EXPECT_EQ(ids[76], t.pad_id());
    EXPECT_NE(ids[1], ids[2]);
    std::string long_text;
    for (int i = 0; i < 200; ++i)
        long_text += "red ";
    const auto long_ids = t.encode(long_text);
    ASSERT_EQ(long_ids.size(), 77u);
    EXPECT_EQ(long_ids[75], ids[1]);
    EXPECT_EQ(long_ids[76], t.eos_id());
    // Chinese text and invalid UTF-8 tokenize to byte symbols without crashing.
    EXPECT_FALSE(t.tokenize("红色的猫").empty());
    EXPECT_FALSE(t.tokenize(std::string("caf\xE9\xFF\x80 x")).empty());
}

TEST(ClipTokenizer, HostileFilesAreInputErrors) {
    const std::string good_vocab = testing::tiny_vocab_json();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", ""},
        {"[1, 2]", ""},
        {"{}", ""},
        {"{\"a\": -1, \"<|startoftext|>\": 1, \"<|endoftext|>\": 2}", ""},
        {"{\"a\": \"x\", \"<|startoftext|>\": 1, \"<|endoftext|>\": 2}", ""},
        {"{\"a\": 1}", ""},
        {"{\"a\": 1, \"<|startoftext|>\": 2, \"<|endoftext|>\": 3", ""},
        {good_vocab, "#version: 0.2\nr e\nbad\n"},
        {good_vocab, "r e x\n"},
        {good_vocab, " e\n"},
    };
    for (const auto& [vocab, merges] : cases) {
        try {
            ClipTokenizer::parse(vocab, merges, "tok");
            ADD_FAILURE() << "accepted: " << vocab.substr(0, 40) << " / " << merges;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("tok"), std::string::npos) << e.what();
        }
    }
    try {
        ClipTokenizer::parse(good_vocab, "#version: 0.2\nr e\nbad\n", "tok");
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(":3"), std::string::npos) << e.what();
    }
}

TEST(ClipText, CausalAndShaped) {
    torch::manual_seed(1);
    ClipTextModel m(ClipTextConfig::tiny());
    m->eval();
    torch::NoGradGuard no_grad;
    auto ids = torch::randint(0, 1000, {2, 77}, torch::kLong);
    const auto a = m->forward(ids);
    EXPECT_EQ(a.sizes(), (std::vector<std::int64_t>{2, 77, 32}));
    ids.index_put_({0, 50}, (ids[0][50].item<std::int64_t>() + 1) % 1000);
    const auto b = m->forward(ids);
    EXPECT_TRUE(torch::allclose(a.index({0, torch::indexing::Slice(0, 50)}),
                                b.index({0, torch::indexing::Slice(0, 50)})));
    EXPECT_FALSE(torch::allclose(a.index({0, 50}), b.index({0, 50})));
    EXPECT_FALSE(torch::allclose(m->forward(ids, 2), b));
    EXPECT_THROW(m->forward(torch::zeros({1, 78}, torch::kLong)), InputError);
}

TEST(ClipText, Sd15LayoutAndKohyaTargets) {
    ParamInitGuard meta(ParamInit::Meta);
    ClipTextModel m(ClipTextConfig::sd15());
    std::map<std::string, std::vector<std::int64_t>> layout;
    for (const auto& [n, s] : parameter_layout(*m))
        layout[n] = s;
    EXPECT_EQ(layout.size(), 196u);
    EXPECT_EQ(layout.at("text_model.embeddings.token_embedding.weight"),
              (std::vector<std::int64_t>{49408, 768}));
    EXPECT_EQ(layout.at("text_model.embeddings.position_embedding.weight"),
              (std::vector<std::int64_t>{77, 768}));
    EXPECT_EQ(layout.at("text_model.encoder.layers.11.mlp.fc1.weight"),
              (std::vector<std::int64_t>{3072, 768}));
    EXPECT_EQ(layout.at("text_model.encoder.layers.0.self_attn.out_proj.bias"),
              (std::vector<std::int64_t>{768}));
    EXPECT_EQ(layout.at("text_model.final_layer_norm.weight"), (std::vector<std::int64_t>{768}));
    const auto targets = text_encoder_lora_targets(*m);
    ASSERT_EQ(targets.size(), 72u);
    std::set<std::string> keys;
    for (const auto& t : targets) {
        keys.insert(t.kohya);
        EXPECT_EQ(t.kohya.rfind("lora_te_text_model_encoder_layers_", 0), 0u) << t.kohya;
        EXPECT_EQ(t.in, t.kohya.find("fc2") != std::string::npos ? 3072 : 768) << t.kohya;
        EXPECT_EQ(t.out, t.kohya.find("fc1") != std::string::npos ? 3072 : 768) << t.kohya;
    }
    EXPECT_EQ(keys.size(), 72u);
    EXPECT_TRUE(keys.count("lora_te_text_model_encoder_layers_0_self_attn_q_proj"));
    EXPECT_TRUE(keys.count("lora_te_text_model_encoder_layers_11_mlp_fc2"));
}

}  // namespace
}  // namespace crucible::sd
