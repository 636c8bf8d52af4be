// The llm.lora task end to end: LoRA fine-tuning of the tiny llama2.c model (fixtures/llama) on
// fixed question -> answer pairs through the engine (run_job), with a byte-level tokenizer.json
// built here; the adapter artifact in PEFT layout; tokenized samples and their loss masks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/safetensors.h"
#include "core/data/chat_dataset.h"
#include "core/data/text/byte_level.h"
#include "core/engine/job.h"
#include "plugins/llm_lora/chat_batches.h"
#include "plugins/llm_lora/generate.h"
#include "plugins/llm_lora/llama_load.h"
#include "plugins/llm_lora/llm_task.h"
#include "plugins/llm_lora/peft_adapter.h"
#include "plugins/llm_lora/tokenizer.h"
#include "tests/support/results_csv.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace crucible::llm {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const char* name) {
    return fs::path(CRUCIBLE_FIXTURES_DIR) / "llama" / name;
}

fs::path fresh(const std::string& name) {
    return test_support::scratch_dir("llm_task_" + name);
}

// Byte-level tokenizer for a 512-token model: ids 0..255 are the bytes (GPT-2 byte map), then
// the Llama 3 chat tokens.
void write_byte_tokenizer(const fs::path& dir) {
    Json vocab = Json::object();
    for (int b = 0; b < 256; ++b)
        vocab[data::text::byte_symbols()[static_cast<std::size_t>(b)]] = b;
    Json added = Json::array();
    int id = 256;
    for (const char* t : {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                          "<|end_header_id|>", "<|eot_id|>"})
        added.push_back({{"id", id++}, {"content", t}, {"special", true}});
    Json j = {{"version", "1.0"},
              {"normalizer", nullptr},
              {"pre_tokenizer",
               {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}},
              {"added_tokens", added},
              {"decoder", {{"type", "ByteLevel"}}}};
    write_json_file(dir / "tokenizer.json", j);
    write_json_file(dir / "tokenizer_config.json",
                    {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|end_of_text|>"}});
}

// A tiny random Llama in Hugging Face layout (LibTorch's default init: N(0, 1) embeddings, so
// scaled to 0.25 std, so the tied head can express confident predictions, unlike llama2.c's
// 0.02-std init whose logits stay within about one nat of uniform).
void write_random_model(const fs::path& dir) {
    LlamaConfig c;
    c.vocab_size = 320;
    c.hidden_size = 64;
    c.intermediate_size = 128;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.max_position_embeddings = 256;
    c.tie_word_embeddings = true;
    torch::manual_seed(7);
    LlamaForCausalLm m(c);
    {
        torch::NoGradGuard no_grad;
        m->model->embed_tokens->weight.mul_(0.25);  // logits start within a few nats of uniform
    }
    save_hf_folder(*m, dir);
    write_byte_tokenizer(dir);
}

const std::vector<std::pair<std::string, std::string>> kPairs{
    {"Capital of France?", "Paris"}, {"Capital of Japan?", "Tokyo"},
    {"Capital of Italy?", "Rome"},   {"Capital of Peru?", "Lima"},
    {"Capital of Egypt?", "Cairo"},  {"Capital of Chile?", "Santiago"},
    {"Capital of Cuba?", "Havana"},  {"Capital of Kenya?", "Nairobi"}};

void write_data(const fs::path& path) {
    std::ofstream out(path);
    for (const auto& [q, a] : kPairs)
        out << Json{{"instruction", q}, {"output", a}}.dump() << "\n";
}

TEST(LlmData, LossMaskCoversResponsesOnly) {
    const auto dir = fresh("mask");
    write_byte_tokenizer(dir);
    const auto tok = load_tokenizer(dir);
    EXPECT_EQ(*tok->eos_id, 257);
    const auto rows =
        data::parse_chat_dataset("{\"instruction\":\"Hi?\",\"output\":\"Yo\"}\n", "d.jsonl");
    ASSERT_TRUE(rows.ok());
    TokenizeOptions o;
    const auto s = tokenize_chat(rows.samples[0], *tok, o);
    // <|begin_of_text|> <|start_header_id|> user <|end_header_id|> \n\n Hi? <|eot_id|> ... Yo
    // <|eot_id|>
    std::vector<std::int64_t> trained;
    for (std::size_t i = 0; i < s.ids.size(); ++i)
        if (s.labels[i] != -100) {
            EXPECT_EQ(s.labels[i], s.ids[i]);
            trained.push_back(s.ids[i]);
        }
    EXPECT_EQ(trained, (std::vector<std::int64_t>{'Y', 'o', 260}));
    EXPECT_EQ(s.ids.front(), 256);
    EXPECT_EQ(tok->decode(s.ids),
              data::join_segments(data::render_chat(rows.samples[0], data::ChatTemplate::Llama3)));
    o.train_on_prompt = true;
    EXPECT_EQ(tokenize_chat(rows.samples[0], *tok, o).trained_tokens(),
              static_cast<std::int64_t>(s.ids.size()));
    o.cutoff_len = 5;
    EXPECT_EQ(tokenize_chat(rows.samples[0], *tok, o).ids.size(), 5u);
    // Packing and collation.
    const auto packed = pack_samples({s, s, s}, 2 * static_cast<std::int64_t>(s.ids.size()) + 1);
    ASSERT_EQ(packed.size(), 2u);
    EXPECT_EQ(packed[0].ids.size(), 2 * s.ids.size());
    const auto b = collate({&packed[0], &packed[1]}, 257);
    EXPECT_EQ(b.tokens.sizes(),
              (std::vector<std::int64_t>{2, static_cast<std::int64_t>(2 * s.ids.size())}));
    EXPECT_EQ(b.tokens[1][-1].item<std::int64_t>(), 257);
    EXPECT_EQ(b.labels[1][-1].item<std::int64_t>(), -100);
    EXPECT_EQ(b.trained_tokens, 9);
    fs::remove_all(dir);
}

// Trains the question-answer pairs with LoRA on every projection (plus `patch`) in
// `dir`/job and returns the train/loss of every step.
std::vector<double> train_pairs(const fs::path& dir, const Json& patch) {
    ensure_llm_task_registered();
    write_random_model(dir / "model");  // tokenizer.json sits in the model folder
    write_data(dir / "qa.jsonl");
    Json options = {{"model", path_to_utf8(dir / "model")},
                    {"data", path_to_utf8(dir / "qa.jsonl")},
                    {"val_split", 0.0},
                    {"epochs", 80},
                    {"batch", 8},
                    {"nbs", 8},
                    {"lr0", 0.005},
                    {"lora_r", 8},
                    {"lora_alpha", 16},
                    {"lora_dropout", 0.0},
                    {"lora_targets", "all"},
                    {"workers", 1},
                    {"checkpoint_steps", 0},
                    {"log_steps", 1}};
    options.update(patch);
    write_json_file(dir / "job" / "spec.json", {{"task", "llm.lora"}, {"options", options}});
    engine::JobOptions jo;
    jo.console = false;
    jo.install_signals = false;
    EXPECT_EQ(engine::run_job(dir / "job", jo), 0) << read_file_bytes(dir / "job" / "worker.log");
    std::vector<double> losses;
    for (const auto& e : read_event_log(dir / "job" / "events.jsonl"))
        if (e.kind == "metric" && e.fields.contains("values") &&
            e.fields["values"].contains("train/loss"))
            losses.push_back(e.fields["values"]["train/loss"].get<double>());
    return losses;
}

TEST(LlmTask, LoraFineTuningLearnsQuestionAnswerPairs) {
    const auto dir = fresh("run");
    const auto losses =
        train_pairs(dir, {{"sample_prompts", "Capital of Peru?"}, {"sample_tokens", 6}});
    ASSERT_GE(losses.size(), 80u);
    // The answers are a fixed function of the questions, so the loss on them can go to zero. A
    // model that learned only their shape (letters, the final <|eot_id|>) stays near
    // ln(26) = 3.3 nats per answer token; under 0.5 nats the adapter has memorized the pairs
    // (the plain loop below reaches ~0.02 in 80 steps; cosine decay here ends lower-LR).
    EXPECT_GT(losses.front(), 5.0);
    EXPECT_LT(losses.back(), 0.5) << "first " << losses.front();

    const auto adapter = dir / "job" / "artifacts" / "adapter";
    ASSERT_TRUE(fs::exists(adapter / "adapter_config.json"));
    const auto file = SafetensorsFile::open(adapter / "adapter_model.safetensors");
    EXPECT_EQ(file.size(), 2u * 7u * 2u);
    EXPECT_NE(file.find("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"), nullptr);
    EXPECT_EQ(file.at("base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight").shape,
              (std::vector<std::int64_t>{32, 8}));
    const std::string log = read_file_bytes(dir / "job" / "worker.log");
    EXPECT_NE(log.find("sample: Capital of Peru? ->"), std::string::npos);
    // The generations are also `sample` events, stamped with the step they were made at.
    bool sample_event = false;
    for (const auto& e : read_event_log(dir / "job" / "events.jsonl")) {
        if (e.kind != event_kind::kSample) continue;
        sample_event = e.fields.value("prompt", std::string()) == "Capital of Peru?" &&
                       e.fields.at("text").is_string() &&
                       e.fields.at("step").get<std::int64_t>() > 0;
    }
    EXPECT_TRUE(sample_event);
    fs::remove_all(dir);
}

// [B2 8/8] QLoRA: the same pairs learned on NF4 base weights; the merged export is the
// dequantized base plus the adapters, so it predicts what the quantized model with its adapter
// predicts.
TEST(LlmTask, QloraOnNf4BaseWeightsLearnsThePairsAndExportsTheMergedModel) {
    const auto dir = fresh("qlora");
    const auto losses = train_pairs(dir, {{"quantize", "nf4"}, {"export_merged", true}});
    ASSERT_GE(losses.size(), 80u);
    EXPECT_GT(losses.front(), 5.0);
    EXPECT_LT(losses.back(), 0.5) << "first " << losses.front();
    const std::string log = read_file_bytes(dir / "job" / "worker.log");
    EXPECT_NE(log.find("nf4: projection weights"), std::string::npos) << log;
    // template=auto (the default) and a tokenizer_config.json without a chat_template.
    EXPECT_NE(log.find("has no chat_template in tokenizer_config.json; using llama-3"),
              std::string::npos)
        << log;

    auto quantized = load_base_model(dir / "model");
    // fp32 projections to 4-bit codes with their block constants: about an eighth of the bytes.
    const auto [before, after] = quantized->quantize_nf4();
    EXPECT_GT(after, 0);
    EXPECT_LT(after, before / 7) << before << " -> " << after;
    load_peft_adapter(*quantized, dir / "job" / "artifacts" / "adapter");
    auto merged = load_base_model(dir / "job" / "artifacts" / "merged");
    quantized->eval();
    merged->eval();
    torch::NoGradGuard no_grad;
    const torch::Tensor tokens = torch::randint(0, 256, {2, 12});
    const torch::Tensor a = quantized->forward(tokens), b = merged->forward(tokens);
    EXPECT_LT((a - b).abs().max().item<double>(), 1e-4);
    // ... and differs from the unquantized base with the same adapter (the export is not the
    // full-precision base).
    auto full = load_base_model(dir / "model");
    load_peft_adapter(*full, dir / "job" / "artifacts" / "adapter");
    full->eval();
    EXPECT_GT((full->forward(tokens) - b).abs().max().item<double>(), 1e-3);
    fs::remove_all(dir);
}

#ifndef _WIN32  // the worker runs through the shell
// [B2 6/8]: two Gloo ranks (crucible-worker, device=cpu ranks=2) with global batch 8 train the
// adapters one process trains with batch 8. The answers differ in length, so the ranks' halves
// hold different numbers of labelled tokens: each rank's loss (a mean over its tokens) weighs
// in by its share of the batch's tokens. Only the adapters' gradients are all-reduced.
TEST(LlmTask, TwoRanksTrainTheAdaptersOneProcessTrains) {
    ensure_llm_task_registered();
    const auto dir = fresh("ranks");
    write_random_model(dir / "model");
    write_data(dir / "qa.jsonl");
    Json options = {{"model", path_to_utf8(dir / "model")},
                    {"data", path_to_utf8(dir / "qa.jsonl")},
                    {"val_split", 0.0},
                    {"epochs", 4},
                    {"batch", 8},
                    {"nbs", 8},
                    {"lr0", 0.005},
                    {"optimizer", "SGD"},
                    {"lora_r", 4},
                    {"lora_alpha", 8},
                    {"lora_dropout", 0.0},
                    {"workers", 1},
                    {"checkpoint_steps", 0},
                    {"sample_prompts", ""},
                    {"device", "cpu"}};
    write_json_file(dir / "one" / "spec.json", {{"task", "llm.lora"}, {"options", options}});
    engine::JobOptions jo;
    jo.console = false;
    jo.install_signals = false;
    ASSERT_EQ(engine::run_job(dir / "one", jo), 0) << read_file_bytes(dir / "one" / "worker.log");
    options["ranks"] = 2;
    write_json_file(dir / "two" / "spec.json", {{"task", "llm.lora"}, {"options", options}});
    const auto two =
        test_support::run_command(test_support::shell_quote(CRUCIBLE_WORKER_EXE) + " --job " +
                                  test_support::shell_quote(dir / "two") + " 2>&1");
    ASSERT_EQ(two.code, 0) << two.out << read_file_bytes(dir / "two" / "worker.log");
    EXPECT_NE(read_file_bytes(dir / "two" / "worker.log").find("rank 0 of 2"), std::string::npos);

    const auto adapter = [&](const char* run) {
        return SafetensorsFile::open(dir / run / "artifacts" / "adapter" /
                                     "adapter_model.safetensors");
    };
    const auto a = adapter("one"), b = adapter("two");
    ASSERT_EQ(a.names(), b.names());
    double worst = 0, largest = 0;
    for (const auto& t : a.tensors()) {
        const auto x = a.data(t), y = b.data(b.at(t.name));
        ASSERT_EQ(x.size(), y.size());
        const auto* fx = reinterpret_cast<const float*>(x.data());
        const auto* fy = reinterpret_cast<const float*>(y.data());
        for (std::size_t k = 0; k < x.size() / sizeof(float); ++k) {
            worst = std::max(worst, static_cast<double>(std::abs(fx[k] - fy[k])));
            largest = std::max(largest, static_cast<double>(std::abs(fx[k])));
        }
    }
    EXPECT_GT(largest, 1e-3) << "the adapters trained";
    EXPECT_LT(worst, 1e-5) << "largest weight " << largest;
    fs::remove_all(dir);
}
#endif

#ifndef _WIN32  // the worker runs through the shell
// [B2 8/8] A QLoRA run's weights files and checkpoints hold the adapters only (the base is read
// again from the model folder and quantized the same way), and a run killed mid-epoch resumes
// to the very adapters of the run that was never killed.
TEST(LlmTask, QloraCheckpointsHoldTheAdaptersAndAKilledRunResumesBitIdentical) {
    ensure_llm_task_registered();
    const auto dir = fresh("qlora_resume");
    write_random_model(dir / "model");
    write_data(dir / "qa.jsonl");
    const Json options = {{"model", path_to_utf8(dir / "model")},
                          {"data", path_to_utf8(dir / "qa.jsonl")},
                          {"quantize", "nf4"},
                          {"val_split", 0.0},
                          {"epochs", 3},
                          {"batch", 2},
                          {"nbs", 2},
                          {"lora_r", 4},
                          {"lora_targets", "all"},
                          {"lora_dropout", 0.1},  // draws from the generators that must resume
                          {"workers", 1},
                          {"checkpoint_steps", 1},
                          {"seed", 5},
                          {"device", "cpu"}};
    const auto run = [&](const char* name, const std::string& fault, bool resume) {
        write_json_file(dir / name / "spec.json", {{"task", "llm.lora"}, {"options", options}});
        std::string command = fault.empty() ? "" : "CRUCIBLE_FAULT=" + fault + " ";
        command += test_support::shell_quote(CRUCIBLE_WORKER_EXE);
        command += " --job ";
        command += test_support::shell_quote(dir / name);
        if (resume) command += " --resume";
        command += " 2>&1";
        return test_support::run_command(command);
    };
    ASSERT_EQ(run("whole", "", false).code, 0) << read_file_bytes(dir / "whole" / "worker.log");
    EXPECT_NE(run("killed", "mid_epoch:1", false).code, 0);
    const auto resumed = run("killed", "", true);
    ASSERT_EQ(resumed.code, 0) << resumed.out << read_file_bytes(dir / "killed" / "worker.log");

    // Adapters only: 2 layers x 7 projections x (A, B), plus the rotary buffer.
    const JobFolder whole(dir / "whole");
    const auto best = SafetensorsFile::open(whole.weights() / "best.safetensors");
    for (const auto& t : best.tensors())
        EXPECT_TRUE(t.name.find(".lora_") != std::string::npos || t.name == "inv_freq") << t.name;
    EXPECT_EQ(best.size(), 2u * 7u * 2u + 1u);
    std::uintmax_t checkpoint_bytes = 0;
    for (const auto& f : fs::directory_iterator(whole.checkpoints()))
        checkpoint_bytes = std::max(checkpoint_bytes, fs::file_size(f.path()));
    std::uintmax_t model_bytes = 0;
    for (const auto& f : fs::directory_iterator(dir / "model"))
        model_bytes += fs::file_size(f.path());
    EXPECT_LT(checkpoint_bytes * 2, model_bytes) << "a checkpoint holds no base weights";

    const auto adapter = [&](const char* name) {
        return read_file_bytes(dir / name / "artifacts" / "adapter" / "adapter_model.safetensors");
    };
    EXPECT_EQ(adapter("killed"), adapter("whole"));
    fs::remove_all(dir);
}
#endif

TEST(LlmTask, BadOptionsAreRefusedNamingTheOption) {
    ASSERT_TRUE(fs::exists(fixture("tiny_llama2c_v0.bin"))) << "fixtures/llama absent";
    ensure_llm_task_registered();
    const auto dir = fresh("bad");
    write_byte_tokenizer(dir / "tok");
    std::ofstream(dir / "broken.jsonl")
        << "{\"instruction\":\"q\",\"output\":\"a\"}\n{\"instruction\":\n";
    const Json base = {{"model", path_to_utf8(fixture("tiny_llama2c_v0.bin"))},
                       {"tokenizer", path_to_utf8(dir / "tok")},
                       {"data", path_to_utf8(dir / "broken.jsonl")},
                       {"epochs", 1}};
    struct Case {
        Json patch;
        std::string expected;
    };
    const std::vector<Case> cases{
        {Json::object(), "broken.jsonl:2"},
        {{{"lora_targets", "q,attn"}}, "lora_targets"},
        {{{"template", "vicuna"}}, "template"},
        {{{"tokenizer", ""}}, "tokenizer"},
        {{{"model", path_to_utf8(dir / "missing.bin")}}, "does not exist"},
    };
    int i = 0;
    for (const auto& c : cases) {
        Json o = base;
        o.update(c.patch);
        const auto job = dir / ("job" + std::to_string(i++));
        write_json_file(job / "spec.json", {{"task", "llm.lora"}, {"options", o}});
        engine::JobOptions jo;
        jo.console = false;
        jo.install_signals = false;
        EXPECT_NE(engine::run_job(job, jo), 0) << c.patch;
        const std::string log =
            fs::exists(job / "worker.log") ? read_file_bytes(job / "worker.log") : "";
        const std::string events =
            fs::exists(job / "events.jsonl") ? read_file_bytes(job / "events.jsonl") : "";
        EXPECT_TRUE(log.find(c.expected) != std::string::npos ||
                    events.find(c.expected) != std::string::npos)
            << c.patch << "\n"
            << log << events;
    }
    fs::remove_all(dir);
}

TEST(Generate, KvCacheGenerationMatchesFullForward) {
    ASSERT_TRUE(fs::exists(fixture("tiny_llama2c_v0.bin"))) << "fixtures/llama absent";
    auto m = load_base_model(fixture("tiny_llama2c_v0.bin"));
    GenerateOptions g;
    g.max_new_tokens = 10;
    const std::vector<std::int64_t> prompt{1, 50, 60, 70};
    const auto out = generate(*m, prompt, g);
    ASSERT_EQ(out.size(), 10u);
    // Greedy without a cache: argmax of the full forward at every step.
    std::vector<std::int64_t> seq = prompt;
    torch::NoGradGuard no_grad;
    for (int i = 0; i < 10; ++i) {
        const auto logits = m->forward(torch::tensor(seq, torch::kLong).unsqueeze(0));
        seq.push_back(logits[0][-1].argmax().item<std::int64_t>());
    }
    EXPECT_EQ(std::vector<std::int64_t>(seq.begin() + 4, seq.end()), out);
    // Top-p sampling is reproducible by seed and stays in the vocabulary.
    g.temperature = 0.8;
    g.top_p = 0.9;
    g.seed = 5;
    const auto a = generate(*m, prompt, g), b = generate(*m, prompt, g);
    EXPECT_EQ(a, b);
    for (auto id : a)
        EXPECT_TRUE(id >= 0 && id < 512);
}

}  // namespace
}  // namespace crucible::llm

namespace crucible::llm {
namespace {

TEST(LlmTrain, PlainAdamWLoopOnLoraLearnsThePairs) {
    const auto dir = fresh("plain");
    write_byte_tokenizer(dir);
    const auto tok = load_tokenizer(dir);
    write_data(dir / "qa.jsonl");
    const auto rows = data::load_chat_dataset(dir / "qa.jsonl");
    std::vector<TokenizedSample> samples;
    for (const auto& r : rows.samples)
        samples.push_back(tokenize_chat(r, *tok, {}));
    std::vector<const TokenizedSample*> ptrs;
    for (const auto& s : samples)
        ptrs.push_back(&s);
    const auto batch = collate(ptrs, 257);
    write_random_model(dir / "model");
    torch::manual_seed(0);
    auto m = load_base_model(dir / "model");
    LoraSpec spec;
    spec.targets = lora_target_names();
    spec.dropout = 0;
    m->add_lora(spec);
    std::vector<torch::Tensor> params;
    for (auto& p : m->parameters())
        if (p.requires_grad()) params.push_back(p);
    torch::optim::AdamW opt(params, torch::optim::AdamWOptions(0.005).weight_decay(0));
    std::vector<double> losses;
    for (int i = 0; i < 100; ++i) {
        opt.zero_grad();
        auto loss = m->loss(batch.tokens, batch.labels);
        loss.backward();
        opt.step();
        losses.push_back(loss.item<double>());
    }
    // Memorized (see LoraFineTuningLearnsQuestionAnswerPairs): from ~12 nats to under 0.4
    // (0.009-0.12 after 100 steps over seeds 0-5; after 60 steps the seed alone moves it
    // between 0.2 and 0.6).
    EXPECT_LT(losses.back(), 0.4) << losses.front() << " " << losses[10] << " " << losses[20] << " "
                                  << losses.back();
    fs::remove_all(dir);
}

}  // namespace
}  // namespace crucible::llm
