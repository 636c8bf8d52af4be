// The Llama-family decoder, its Hugging Face loader and PEFT adapters against golden references
// made by the real implementations (tests/fixtures/golden, written by
// tests/fixtures/make_golden.py with transformers and peft; versions in its README): logits of
// tiny Llama 2-style, Llama 3-style, Qwen2 and Qwen3 folders as transformers 5 saves them, one
// LoRA training step (loss and adapter gradients) on a PEFT adapter file, NF4 codes as
// bitsandbytes quantizes, and the same LoRA step on NF4 base weights (QLoRA). fp32 on the CPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "core/base/json.h"
#include "core/engine/nf4.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/llm_lora/llama_load.h"
#include "plugins/llm_lora/llama_model.h"
#include "plugins/llm_lora/peft_adapter.h"
#include "tests/fixtures/golden_compare.h"
#include "tests/support/temp_dir.h"

namespace crucible::llm {
namespace {

namespace fs = std::filesystem;

using golden::kTolerance;
using golden::relative_diff;

std::map<std::string, torch::Tensor> load_case(const std::string& file) {
    return engine::load_safetensors(golden::path(file));
}

class GoldenLlm : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenLlm, LogitsMatchTransformers) {
    const std::string name = GetParam();
    auto model = load_base_model(golden::path(name));
    model->eval();
    const auto c = load_case(name + "_case.safetensors");
    const torch::Tensor tokens = c.at("tokens"), want = c.at("logits");
    torch::NoGradGuard no_grad;
    for (auto kernel : {AttentionKernel::Plain, AttentionKernel::Auto}) {
        model->kernel = kernel;
        const std::string what =
            name + (kernel == AttentionKernel::Plain ? " logits (plain)" : " logits (auto)");
        EXPECT_LE(relative_diff(model->forward(tokens), want, what), kTolerance);
    }
    // The KV-cache path: a 9-token prompt, then one token at a time.
    KvCache cache;
    std::vector<torch::Tensor> parts{model->forward(tokens.narrow(1, 0, 9), &cache)};
    for (std::int64_t i = 9; i < tokens.size(1); ++i)
        parts.push_back(model->forward(tokens.narrow(1, i, 1), &cache));
    EXPECT_LE(relative_diff(torch::cat(parts, 1), want, name + " logits (KV cache)"), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Transformers, GoldenLlm,
                         ::testing::Values("llama2_tiny", "llama3_tiny", "qwen2_tiny",
                                           "qwen3_tiny"));

TEST(GoldenLlmConfig, Transformers5ConfigsAreReadWithTheirRopeParameters) {
    // transformers 5 writes rope_theta and the scaling inside "rope_parameters".
    const auto llama3 = load_base_model(golden::path("llama3_tiny"))->config;
    EXPECT_EQ(llama3.rope_theta, 500000.0);
    EXPECT_EQ(llama3.rope_scaling.type, "llama3");
    EXPECT_EQ(llama3.rope_scaling.factor, 8.0);
    EXPECT_EQ(llama3.rope_scaling.original_max_position_embeddings, 64);
    EXPECT_EQ(llama3.num_key_value_heads, 2);
    EXPECT_TRUE(llama3.tie_word_embeddings);
    const auto llama2 = load_base_model(golden::path("llama2_tiny"))->config;
    EXPECT_EQ(llama2.rope_theta, 10000.0);
    EXPECT_EQ(llama2.rope_scaling.type, "");
    EXPECT_FALSE(llama2.tie_word_embeddings);
    const auto qwen2 = load_base_model(golden::path("qwen2_tiny"))->config;
    EXPECT_EQ(qwen2.rope_theta, 1000000.0);
    EXPECT_TRUE(qwen2.attention_bias);
    EXPECT_EQ(qwen2.rms_norm_eps, 1e-6);
    EXPECT_FALSE(qwen2.qk_norm);
    const auto qwen3 = load_base_model(golden::path("qwen3_tiny"))->config;
    EXPECT_TRUE(qwen3.qk_norm);
    EXPECT_FALSE(qwen3.attention_bias);
    EXPECT_EQ(qwen3.head_size(), 16);  // not hidden 48 / 4 heads
}

// One PEFT LoRA step of the Llama 3-style model against `case_file`: logits, loss and every
// adapter gradient. With `nf4`, the projections are quantized first (QLoRA).
void check_lora_step(const std::string& case_file, bool nf4) {
    auto model = load_base_model(golden::path("llama3_tiny"));
    if (nf4) model->quantize_nf4();
    const LoraSpec spec = load_peft_adapter(*model, golden::path("llama3_tiny_lora"));
    EXPECT_EQ(spec.rank, 4);
    EXPECT_EQ(spec.alpha, 8.0);
    EXPECT_EQ(spec.targets, lora_target_names());
    model->train();
    const auto c = load_case(case_file);
    const torch::Tensor tokens = c.at("tokens"), labels = c.at("labels");
    {
        torch::NoGradGuard no_grad;
        EXPECT_LE(relative_diff(model->forward(tokens), c.at("logits"), case_file + " logits"),
                  kTolerance);
    }
    const torch::Tensor loss = model->loss(tokens, labels);
    EXPECT_LE(relative_diff(loss.detach(), c.at("loss"), case_file + " loss"), kTolerance);
    loss.backward();
    int compared = 0;
    double worst = 0;
    for (auto& [name, proj] : model->projections()) {
        ASSERT_TRUE(proj->has_adapter()) << name;
        EXPECT_EQ(proj->is_quantized(), nf4) << name;
        for (const char* part : {"lora_A", "lora_B"}) {
            const std::string key = "base_model.model." + name + "." + part + ".weight";
            const auto it = c.find("grad." + key);
            ASSERT_NE(it, c.end()) << "no reference gradient for " << key;
            // The model's own parameter name, as PEFT's layout spells it.
            const torch::Tensor grad =
                proj->named_parameters()[std::string(part) + ".weight"].grad();
            ASSERT_TRUE(grad.defined()) << "no gradient for " << key;
            const double rel = relative_diff(grad, it->second, "grad " + key);
            EXPECT_LE(rel, kTolerance) << key;
            worst = std::max(worst, rel);
            ++compared;
        }
    }
    const auto references = std::count_if(
        c.begin(), c.end(), [](const auto& item) { return item.first.rfind("grad.", 0) == 0; });
    EXPECT_EQ(compared, references);
    std::cout << "[golden] " << case_file << " gradients: " << compared
              << " tensors, worst relative " << worst << "\n";
}

// Our adapter writer against PEFT's own save_pretrained: PEFT's adapter read in and written
// out again is the same file content (every tensor name, shape and value) and a config that
// agrees on everything PEFT's loader reads, so what Crucible writes loads in PEFT as PEFT's does.
TEST(GoldenLora, WrittenAdapterIsPeftsOwnFile) {
    auto model = load_base_model(golden::path("llama3_tiny"));
    const LoraSpec spec = load_peft_adapter(*model, golden::path("llama3_tiny_lora"));
    const test_support::TempDir scratch("peft_roundtrip");
    const fs::path out = scratch / "adapter";
    save_peft_adapter(*model, spec, out, "llama3_tiny");
    const auto theirs =
        engine::load_safetensors(golden::path("llama3_tiny_lora") / "adapter_model.safetensors");
    const auto ours = engine::load_safetensors(out / "adapter_model.safetensors");
    EXPECT_EQ(ours.size(), theirs.size());
    for (const auto& [name, t] : theirs) {
        const auto it = ours.find(name);
        ASSERT_NE(it, ours.end()) << name;
        EXPECT_EQ(it->second.scalar_type(), t.scalar_type()) << name;
        EXPECT_TRUE(torch::equal(it->second, t)) << name;
    }
    const Json peft = read_json_file(golden::path("llama3_tiny_lora") / "adapter_config.json");
    const Json mine = read_json_file(out / "adapter_config.json");
    for (const char* key : {"peft_type", "task_type", "r", "lora_alpha", "lora_dropout", "bias",
                            "fan_in_fan_out", "use_rslora", "use_dora", "inference_mode",
                            "base_model_name_or_path", "modules_to_save", "layers_to_transform"}) {
        ASSERT_TRUE(mine.contains(key)) << key;
        EXPECT_EQ(mine[key], peft[key]) << key;
    }
    std::vector<std::string> a = peft["target_modules"].get<std::vector<std::string>>(),
                             b = mine["target_modules"].get<std::vector<std::string>>();
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b);  // a set to PEFT, written in its iteration order
}

TEST(GoldenLora, PeftStepGivesTheReferenceLossAndAdapterGradients) {
    check_lora_step("llama3_tiny_lora_step.safetensors", /*nf4=*/false);
}

TEST(GoldenQlora, StepOnNf4BaseWeightsGivesTheReferenceLossAndAdapterGradients) {
    // The reference ran PEFT on bitsandbytes' NF4 round trip of every projection: equal
    // figures need our codes to be bitsandbytes' and our on-the-fly dequantizing (forward and
    // backward) to be right.
    check_lora_step("llama3_tiny_qlora_step.safetensors", /*nf4=*/true);
}

TEST(GoldenNf4, CodesAndDoubleQuantizedConstantsAreBitsandbytes) {
    const auto c = load_case("nf4_case.safetensors");
    const auto& levels = engine::nf4_levels();
    const torch::Tensor ours =
        torch::from_blob(const_cast<float*>(levels.data()), {16}, torch::kFloat32);
    EXPECT_TRUE(torch::equal(ours, c.at("nf4_code")));
    EXPECT_TRUE(torch::equal(engine::dynamic_code_levels(), c.at("absmax_code")));
    for (const std::string name : {"big", "ragged"}) {
        const auto q = engine::Nf4Tensor::quantize(c.at(name + ".weight"));
        // Codes are exact: a single differing index is a different model.
        const auto mismatched = [](const torch::Tensor& a, const torch::Tensor& b) {
            return (a.to(torch::kInt32) != b.to(torch::kInt32)).sum().item<std::int64_t>();
        };
        ASSERT_EQ(q.packed.sizes(), c.at(name + ".packed").sizes()) << name;
        EXPECT_EQ(mismatched(q.packed, c.at(name + ".packed")), 0) << name;
        ASSERT_EQ(q.absmax_codes.sizes(), c.at(name + ".absmax_codes").sizes()) << name;
        EXPECT_EQ(mismatched(q.absmax_codes, c.at(name + ".absmax_codes")), 0) << name;
        EXPECT_LE(relative_diff(q.absmax_scales, c.at(name + ".absmax_scales"), name + " scales"),
                  1e-6);
        EXPECT_LE(relative_diff(q.absmax_offset, c.at(name + ".absmax_offset"), name + " offset"),
                  1e-6);
        EXPECT_LE(relative_diff(q.dequantize(), c.at(name + ".dequantized"), name + " values"),
                  1e-6);
    }
}

}  // namespace
}  // namespace crucible::llm
