// The Llama decoder against llama2.c's reference model (fixtures/llama), the llama2.c <-> Hugging
// Face layouts, the KV cache, and the loaders' errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/autocast.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/llm_lora/llama_load.h"
#include "plugins/llm_lora/llama_model.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::llm {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const char* name) {
    return fs::path(CRUCIBLE_FIXTURES_DIR) / "llama" / name;
}

fs::path temp_dir(const std::string& name) {
    return test_support::scratch_dir("llm_" + name);
}

struct Reference {
    torch::Tensor tokens, logits;
};

Reference reference() {
    auto t = engine::load_safetensors(fixture("tiny_llama2c_case.safetensors"));
    return {t.at("tokens"), t.at("logits")};
}

TEST(LlamaModel, Llama2cLogitsMatchReference) {
    ASSERT_TRUE(fs::exists(fixture("tiny_llama2c_v0.bin"))) << "fixtures/llama absent";
    const auto ref = reference();
    auto model = load_base_model(fixture("tiny_llama2c_v0.bin"));
    EXPECT_EQ(model->config.hidden_size, 64);
    EXPECT_EQ(model->config.num_key_value_heads, 4);
    EXPECT_TRUE(model->config.tie_word_embeddings);
    model->eval();
    torch::NoGradGuard no_grad;
    for (auto kernel : {AttentionKernel::Plain, AttentionKernel::Auto}) {
        model->kernel = kernel;
        const auto logits = model->forward(ref.tokens);
        ASSERT_EQ(logits.sizes(), ref.logits.sizes());
        EXPECT_LT((logits - ref.logits).abs().max().item<double>(), 1e-4);
    }
}

TEST(LlamaModel, KvCacheGivesTheSameLogits) {
    ASSERT_TRUE(fs::exists(fixture("tiny_llama2c_v0.bin"))) << "fixtures/llama absent";
    const auto ref = reference();
    auto model = load_base_model(fixture("tiny_llama2c_v0.bin"));
    model->eval();
    torch::NoGradGuard no_grad;
    const auto full = model->forward(ref.tokens);
    // A 5-token prompt, then one token at a time.
    KvCache cache;
    std::vector<torch::Tensor> parts{model->forward(ref.tokens.narrow(1, 0, 5), &cache)};
    for (std::int64_t i = 5; i < ref.tokens.size(1); ++i)
        parts.push_back(model->forward(ref.tokens.narrow(1, i, 1), &cache));
    EXPECT_EQ(cache.length(), ref.tokens.size(1));
    const auto stepped = torch::cat(parts, 1);
    EXPECT_LT((stepped - full).abs().max().item<double>(), 1e-5);
    // Two-token continuation (a masked block after a cached prefix).
    KvCache cache2;
    model->forward(ref.tokens.narrow(1, 0, 7), &cache2);
    const auto block = model->forward(ref.tokens.narrow(1, 7, 3), &cache2);
    EXPECT_LT((block - full.narrow(1, 7, 3)).abs().max().item<double>(), 1e-5);
}

TEST(LlamaModel, HuggingFaceFolderRoundTripGivesTheSameLogits) {
    ASSERT_TRUE(fs::exists(fixture("tiny_llama2c_v0.bin"))) << "fixtures/llama absent";
    const auto ref = reference();
    auto model = load_base_model(fixture("tiny_llama2c_v0.bin"));
    const auto dir = temp_dir("hf");
    save_hf_folder(*model, dir / "f32");
    save_hf_folder(*model, dir / "sharded", torch::kFloat32, 100000);
    save_hf_folder(*model, dir / "bf16", torch::kBFloat16);
    EXPECT_TRUE(fs::exists(dir / "sharded" / "model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(dir / "sharded" / "model.safetensors"));
    torch::NoGradGuard no_grad;
    for (const char* sub : {"f32", "sharded"}) {
        auto hf = load_base_model(dir / sub);
        hf->eval();
        EXPECT_LT((hf->forward(ref.tokens) - ref.logits).abs().max().item<double>(), 1e-4) << sub;
    }
    auto bf = load_base_model(dir / "bf16");
    bf->eval();
    // bf16 weights carry ~3 significant digits.
    EXPECT_LT((bf->forward(ref.tokens) - ref.logits).abs().max().item<double>(), 0.1);
    // The HF layout is the Meta layout permuted: undo the permutation and compare raw weights.
    const auto tensors = engine::load_safetensors(dir / "f32" / "model.safetensors");
    const auto q = tensors.at("model.layers.1.self_attn.q_proj.weight");
    const auto back = permute_rotary_to_meta(q, 8);
    EXPECT_TRUE(torch::equal(permute_rotary_to_hf(back, 8), q));
    EXPECT_FALSE(torch::equal(back, q));
    fs::remove_all(dir);
}

TEST(LlamaModel, FusedAndPlainAttentionAgreeWithGqaAndBias) {
    LlamaConfig c;
    c.vocab_size = 50;
    c.hidden_size = 32;
    c.intermediate_size = 48;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.attention_bias = true;
    c.rope_theta = 500000;
    c.rope_scaling.type = "llama3";
    c.rope_scaling.factor = 8;
    c.rope_scaling.original_max_position_embeddings = 64;
    torch::manual_seed(3);
    LlamaForCausalLm m(c);
    m->eval();
    const auto tokens = torch::randint(0, 50, {2, 9}, torch::kLong);
    torch::NoGradGuard no_grad;
    m->kernel = AttentionKernel::Plain;
    const auto plain = m->forward(tokens);
    EXPECT_EQ(plain.sizes(), (std::vector<std::int64_t>{2, 9, 50}));
    m->kernel = AttentionKernel::Fused;
    EXPECT_LT((m->forward(tokens) - plain).abs().max().item<double>(), 1e-5);
    // With a KV cache (an explicit mask for the new queries) and one query at a time.
    {
        KvCache cache;
        const auto first = m->forward(tokens.narrow(1, 0, 5), &cache);
        const auto rest = m->forward(tokens.narrow(1, 5, 3), &cache);
        const auto last = m->forward(tokens.narrow(1, 8, 1), &cache);
        const auto joined = torch::cat({first, rest, last}, 1);
        EXPECT_LT((joined - plain).abs().max().item<double>(), 1e-5);
    }
    // Under bf16 autocast the fused kernel stays near the fp32 plain formula.
    {
        engine::AutocastGuard autocast({true, c10::DeviceType::CPU, torch::kBFloat16});
        const auto low = m->forward(tokens).to(torch::kFloat32);
        EXPECT_LT((low - plain).abs().max().item<double>(),
                  5e-2 * plain.abs().max().item<double>());
    }
    // Position 0 only sees itself: changing later tokens leaves its logits alone (causality).
    m->kernel = AttentionKernel::Plain;
    auto other = tokens.clone();
    other.narrow(1, 1, 8).fill_(7);
    EXPECT_TRUE(torch::allclose(m->forward(other).narrow(1, 0, 1), plain.narrow(1, 0, 1)));
    // llama3 rope scaling divides the low frequencies by the factor and keeps the high ones.
    const auto inv = rope_inv_freq(c);
    LlamaConfig plain_rope = c;
    plain_rope.rope_scaling.type.clear();
    const auto inv0 = rope_inv_freq(plain_rope);
    EXPECT_FLOAT_EQ(inv[0].item<float>(), inv0[0].item<float>());
    EXPECT_NEAR(inv[-1].item<float>(), inv0[-1].item<float>() / 8, 1e-12);
}

void write_bytes(const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
}

TEST(LlamaLoad, HostileInputsAreRefusedWithClearMessages) {
    ASSERT_TRUE(fs::exists(fixture("tiny_llama2c_v0.bin"))) << "fixtures/llama absent";
    auto model = load_base_model(fixture("tiny_llama2c_v0.bin"));
    const auto dir = temp_dir("hostile");
    save_hf_folder(*model, dir / "good");
    const std::string bin = read_file_bytes(fixture("tiny_llama2c_v0.bin"));
    const Json config = read_json_file(dir / "good" / "config.json");
    const auto tensors = engine::load_safetensors(dir / "good" / "model.safetensors");

    struct Case {
        std::string name;
        std::function<void(const fs::path&)> make;  // writes the input into a folder
        bool llama2c;
        std::string expected;  // substring of the message
    };
    auto hf_with = [&](std::function<void(Json&, std::map<std::string, torch::Tensor>&)> edit) {
        return [=](const fs::path& d) {
            Json c = config;
            auto t = tensors;
            edit(c, t);
            write_json_file(d / "config.json", c);
            engine::save_safetensors(d / "model.safetensors", t);
        };
    };
    const std::vector<Case> cases{
        {"empty bin", [&](const fs::path& d) { write_bytes(d / "m.bin", ""); }, true, "too short"},
        {"truncated bin", [&](const fs::path& d) { write_bytes(d / "m.bin", bin.substr(0, 5000)); },
         true, "does not match its header"},
        {"one extra byte", [&](const fs::path& d) { write_bytes(d / "m.bin", bin + "x"); }, true,
         "does not match its header"},
        {"zero heads",
         [&](const fs::path& d) {
             std::string b = bin;
             std::memset(b.data() + 12, 0, 4);
             write_bytes(d / "m.bin", b);
         },
         true, "num_attention_heads"},
        {"v1 magic", [&](const fs::path& d) { write_bytes(d / "m.bin", "24ka" + bin.substr(4)); },
         true, "version"},
        {"missing tensor",
         hf_with([](Json&, auto& t) { t.erase("model.layers.1.mlp.up_proj.weight"); }), false,
         "missing tensor 'model.layers.1.mlp.up_proj.weight'"},
        {"wrong shape", hf_with([](Json&, auto& t) { t["model.norm.weight"] = torch::ones({63}); }),
         false, "tensor 'model.norm.weight' has shape [63], expected [64]"},
        {"unexpected tensor",
         hf_with([](Json&, auto& t) { t["model.layers.2.mlp.up_proj.weight"] = torch::ones({2}); }),
         false, "unexpected tensor 'model.layers.2.mlp.up_proj.weight'"},
        {"integer tensor",
         hf_with([](Json&, auto& t) { t["model.norm.weight"] = torch::ones({64}, torch::kInt32); }),
         false, "non-floating"},
        {"unsupported architecture", hf_with([](Json& c, auto&) { c["model_type"] = "gpt2"; }),
         false, "unsupported architecture: model_type 'gpt2'"},
        {"heads do not divide", hf_with([](Json& c, auto&) { c["num_key_value_heads"] = 3; }),
         false, "not a multiple of num_key_value_heads"},
        {"string size", hf_with([](Json& c, auto&) { c["hidden_size"] = "64"; }), false,
         "field 'hidden_size': expected an integer"},
        {"unknown rope scaling", hf_with([](Json& c, auto&) {
             c["rope_scaling"] = {{"type", "yarn"}, {"factor", 2}};
         }),
         false, "rope_scaling type 'yarn'"},
        {"qwen3 without its q/k norms", hf_with([](Json& c, auto&) { c["model_type"] = "qwen3"; }),
         false, "missing tensor 'model.layers.0.self_attn.k_norm.weight'"},
        {"sliding window switched on", hf_with([](Json& c, auto&) {
             c["model_type"] = "qwen2";
             c["use_sliding_window"] = true;
         }),
         false, "use_sliding_window true is not supported"},
        {"sliding window of the wrong type",
         hf_with([](Json& c, auto&) { c["use_sliding_window"] = "yes"; }), false,
         "use_sliding_window"},
        {"no weights", [&](const fs::path& d) { write_json_file(d / "config.json", config); },
         false, "no model.safetensors"},
        {"index escapes the folder",
         [&](const fs::path& d) {
             write_json_file(d / "config.json", config);
             write_json_file(d / "model.safetensors.index.json",
                             Json{{"weight_map", {{"model.norm.weight", "../x.safetensors"}}}});
         },
         false, "not a file name inside the folder"},
        {"index names a tensor the shard lacks",
         [&](const fs::path& d) {
             write_json_file(d / "config.json", config);
             engine::save_safetensors(d / "a.safetensors", {{"x", torch::ones({1})}});
             write_json_file(d / "model.safetensors.index.json",
                             Json{{"weight_map", {{"model.norm.weight", "a.safetensors"}}}});
         },
         false, "tensor 'model.norm.weight' is missing"},
        {"truncated safetensors",
         [&](const fs::path& d) {
             write_json_file(d / "config.json", config);
             const auto good = read_file_bytes(dir / "good" / "model.safetensors");
             write_bytes(d / "model.safetensors", good.substr(0, good.size() / 2));
         },
         false, "model.safetensors"},
        {"中文 folder without config", [&](const fs::path&) {}, false, "no config.json"},
    };
    int i = 0;
    for (const auto& c : cases) {
        const auto d = dir / path_from_utf8("case" + std::to_string(i++) + "_中文");
        fs::create_directories(d);
        c.make(d);
        try {
            if (c.llama2c)
                load_base_model(d / "m.bin");
            else
                load_base_model(d);
            ADD_FAILURE() << c.name << ": accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos)
                << c.name << ": " << e.what();
        }
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace crucible::llm
