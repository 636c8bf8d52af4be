// LoRA layers on the Llama decoder and PEFT-layout adapter files.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/engine/autocast.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/llm_lora/llama_load.h"
#include "plugins/llm_lora/peft_adapter.h"
#include "tests/support/temp_dir.h"

namespace crucible::llm {
namespace {

namespace fs = std::filesystem;

LlamaConfig tiny_config() {
    LlamaConfig c;
    c.vocab_size = 40;
    c.hidden_size = 16;
    c.intermediate_size = 24;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.max_position_embeddings = 32;
    return c;
}

// Gives every adapter a non-zero B so that it changes the output.
void randomize_adapters(LlamaForCausalLmImpl& m) {
    torch::NoGradGuard no_grad;
    for (auto& [name, proj] : m.projections())
        if (proj->has_adapter()) proj->lora.up.normal_(0, 0.2);
}

TEST(Lora, ZeroBReproducesTheBaseModelExactly) {
    torch::manual_seed(1);
    LlamaForCausalLm m(tiny_config());
    m->eval();
    const auto tokens = torch::randint(0, 40, {2, 7}, torch::kLong);
    torch::NoGradGuard no_grad;
    const auto base = m->forward(tokens);
    LoraSpec spec;
    spec.targets = {"q", "k", "v", "o", "gate", "up", "down"};
    EXPECT_EQ(m->add_lora(spec), 14);
    EXPECT_TRUE(torch::equal(m->forward(tokens), base));
}

TEST(Lora, OnlyAdapterParametersTrain) {
    LlamaForCausalLm m(tiny_config());
    m->add_lora(LoraSpec{});
    int trainable = 0;
    for (const auto& p : m->named_parameters()) {
        const bool lora = p.key().find(".lora_") != std::string::npos;
        EXPECT_EQ(p.value().requires_grad(), lora) << p.key();
        trainable += lora;
    }
    EXPECT_EQ(trainable, 2 * 2 * 2);  // 2 layers x (q, v) x (A, B)
}

// Checkpointing recomputes each layer in backward (with the same dropout masks): the adapters'
// gradients equal those of a plain backward although the layers' input (the frozen embedding)
// needs no gradient.
TEST(Lora, GradientCheckpointingGivesTheSameAdapterGradients) {
    auto adapter_grads = [](bool checkpointing) {
        torch::manual_seed(3);
        LlamaForCausalLm m(tiny_config());
        LoraSpec spec;
        spec.targets = {"q", "v", "down"};
        spec.dropout = 0.3;
        m->add_lora(spec);
        randomize_adapters(*m);
        m->train();
        m->gradient_checkpointing = checkpointing;
        const auto tokens = torch::randint(0, 40, {2, 9}, torch::kLong);
        torch::manual_seed(11);  // dropout masks
        m->loss(tokens, tokens).backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : m->named_parameters())
            if (p.value().requires_grad()) grads.push_back(p.value().grad());
        return grads;
    };
    const auto plain = adapter_grads(false);
    const auto ckpt = adapter_grads(true);
    ASSERT_EQ(plain.size(), ckpt.size());
    ASSERT_EQ(plain.size(), 2u * 3 * 2);
    for (std::size_t i = 0; i < plain.size(); ++i) {
        ASSERT_TRUE(ckpt[i].defined()) << "adapter tensor " << i << " got no gradient";
        EXPECT_GT(plain[i].abs().max().item<float>(), 0.0f);
        EXPECT_TRUE(torch::allclose(plain[i], ckpt[i], 1e-5, 1e-6)) << "adapter tensor " << i;
    }
}

// amp_dtype=bf16 on the CPU (the trainer's CPU autocast): a LoRA step runs through the fused
// head loss, rotary and attention in bf16, keeps the adapters' gradients fp32, and lands near the
// fp32 step (bf16 keeps 8 bits of mantissa).
TEST(Lora, AStepUnderCpuBf16AutocastIsNearTheFp32Step) {
    auto step = [](bool bf16) {
        torch::manual_seed(4);
        LlamaForCausalLm m(tiny_config());
        m->add_lora(LoraSpec{});
        randomize_adapters(*m);
        const auto tokens = torch::randint(0, 40, {2, 9}, torch::kLong);
        torch::Tensor loss;
        {
            engine::AutocastGuard autocast(
                engine::training_autocast(bf16, "bf16", torch::Device(torch::kCPU)));
            loss = m->loss(tokens, tokens);
        }
        loss.backward();
        std::vector<torch::Tensor> grads{loss.detach()};
        for (const auto& p : m->named_parameters())
            if (p.value().requires_grad()) grads.push_back(p.value().grad());
        return grads;
    };
    const auto fp32 = step(false);
    const auto bf16 = step(true);
    ASSERT_EQ(fp32.size(), bf16.size());
    // Not the same numbers (the same seed in fp32 would give them bit for bit), but near.
    EXPECT_NE(bf16[0].item<double>(), fp32[0].item<double>());
    EXPECT_NEAR(bf16[0].item<double>(), fp32[0].item<double>(), 0.05 * fp32[0].item<double>());
    for (std::size_t i = 1; i < fp32.size(); ++i) {
        ASSERT_TRUE(bf16[i].defined()) << "adapter tensor " << i;
        EXPECT_EQ(bf16[i].scalar_type(), torch::kFloat32) << "adapter tensor " << i;
        EXPECT_TRUE(torch::isfinite(bf16[i]).all().item<bool>()) << "adapter tensor " << i;
        const double scale = fp32[i].abs().max().item<double>();
        EXPECT_LE((bf16[i] - fp32[i]).abs().max().item<double>(), 0.1 * scale + 1e-6)
            << "adapter tensor " << i;
    }
}

TEST(Lora, ForwardEqualsMergedWeightForward) {
    torch::manual_seed(2);
    for (bool rs : {false, true}) {
        LlamaForCausalLm m(tiny_config());
        m->eval();
        LoraSpec spec;
        spec.rank = 4;
        spec.alpha = 8;
        spec.rslora = rs;
        spec.targets = {"q_proj", "v_proj", "down_proj"};
        m->add_lora(spec);
        randomize_adapters(*m);
        const auto tokens = torch::randint(0, 40, {2, 7}, torch::kLong);
        torch::NoGradGuard no_grad;
        const auto with_lora = m->forward(tokens);
        // merged_weight = W + scale·B·A, computed here independently.
        auto proj = m->model->layers->ptr<LlamaDecoderLayerImpl>(1)->mlp->down_proj;
        const double scale = rs ? 8 / 2.0 : 8 / 4.0;
        EXPECT_DOUBLE_EQ(proj->lora.scale, scale);
        const auto expected = proj->weight + scale * torch::matmul(proj->lora.up, proj->lora.down);
        EXPECT_LT((proj->merged_weight() - expected).abs().max().item<double>(), 1e-6);
        m->merge_lora();
        EXPECT_FALSE(proj->has_adapter());
        EXPECT_LT((proj->weight - expected).abs().max().item<double>(), 1e-6);
        const auto merged = m->forward(tokens);
        EXPECT_LT((merged - with_lora).abs().max().item<double>(), 1e-5);
        EXPECT_GT(with_lora.abs().max().item<double>(), 0.01);
    }
}

TEST(Lora, AdapterFileHasPeftNamesAndShapes) {
    torch::manual_seed(3);
    LlamaForCausalLm m(tiny_config());
    LoraSpec spec;
    spec.rank = 3;
    spec.alpha = 6;
    spec.targets = {"v", "q", "gate"};
    m->add_lora(spec);
    randomize_adapters(*m);
    const test_support::TempDir scratch("llm_peft");
    const auto dir = scratch / "adapter";
    spec.validate();
    save_peft_adapter(*m, spec, dir, "tiny-base");
    const auto file = SafetensorsFile::open(dir / "adapter_model.safetensors");
    EXPECT_EQ(file.metadata().at("format"), "pt");
    std::map<std::string, std::vector<std::int64_t>> shapes;
    for (const auto& t : file.tensors())
        shapes[t.name] = t.shape;
    std::map<std::string, std::vector<std::int64_t>> expected;
    for (int i = 0; i < 2; ++i) {
        const std::string p = "base_model.model.model.layers." + std::to_string(i) + ".";
        expected[p + "self_attn.q_proj.lora_A.weight"] = {3, 16};
        expected[p + "self_attn.q_proj.lora_B.weight"] = {16, 3};
        expected[p + "self_attn.v_proj.lora_A.weight"] = {3, 16};
        expected[p + "self_attn.v_proj.lora_B.weight"] = {8, 3};  // 2 kv heads x 4
        expected[p + "mlp.gate_proj.lora_A.weight"] = {3, 16};
        expected[p + "mlp.gate_proj.lora_B.weight"] = {24, 3};
    }
    EXPECT_EQ(shapes, expected);
    const Json config = read_json_file(dir / "adapter_config.json");
    EXPECT_EQ(config["peft_type"], "LORA");
    EXPECT_EQ(config["task_type"], "CAUSAL_LM");
    EXPECT_EQ(config["r"], 3);
    EXPECT_EQ(config["lora_alpha"], 6.0);
    EXPECT_EQ(config["target_modules"], Json::array({"q_proj", "v_proj", "gate_proj"}));
    EXPECT_EQ(config["bias"], "none");
    EXPECT_EQ(config["fan_in_fan_out"], false);
    EXPECT_EQ(config["use_rslora"], false);
    EXPECT_EQ(config["base_model_name_or_path"], "tiny-base");
    EXPECT_EQ(config["inference_mode"], true);

    // Loading the adapter onto a fresh copy of the base reproduces the adapted model.
    const auto tokens = torch::randint(0, 40, {1, 6}, torch::kLong);
    LlamaForCausalLm other(tiny_config());
    {
        torch::NoGradGuard no_grad;
        for (auto& [name, t] : m->base_state_dict())
            other->base_state_dict().at(name).copy_(t);
    }
    load_peft_adapter(*other, dir);
    m->eval();
    other->eval();
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(other->forward(tokens), m->forward(tokens)));

    // Broken adapters name what is wrong.
    auto tensors = engine::load_safetensors(dir / "adapter_model.safetensors");
    tensors.erase("base_model.model.model.layers.1.mlp.gate_proj.lora_B.weight");
    engine::save_safetensors(dir / "adapter_model.safetensors", tensors);
    LlamaForCausalLm third(tiny_config());
    try {
        load_peft_adapter(*third, dir);
        ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
        EXPECT_NE(
            std::string(e.what()).find(
                "missing tensor 'base_model.model.model.layers.1.mlp.gate_proj.lora_B.weight'"),
            std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
}

TEST(Lora, SpecValidationNamesTheOption) {
    LoraSpec s;
    s.targets = {"q", "mlp"};
    try {
        s.validate();
        ADD_FAILURE();
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "lora_targets");
    }
    s = LoraSpec{};
    s.rank = 0;
    EXPECT_THROW(s.validate(), InputError);
}

}  // namespace
}  // namespace crucible::llm
