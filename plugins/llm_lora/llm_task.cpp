#include "plugins/llm_lora/llm_task.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/rank_plan.h"
#include "core/base/sha256.h"
#include "core/data/augment/random.h"
#include "core/data/chat_dataset.h"
#include "core/data/chat_template.h"
#include "core/engine/task.h"
#include "core/engine/train_options.h"
#include "plugins/llm_lora/chat_batches.h"
#include "plugins/llm_lora/generate.h"
#include "plugins/llm_lora/llama_load.h"
#include "plugins/llm_lora/memory_estimate.h"
#include "plugins/llm_lora/peft_adapter.h"
#include "plugins/llm_lora/tokenizer.h"

namespace crucible::llm {
namespace {

using engine::Batch;
using engine::BatchSource;

std::vector<std::string> split_list(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, sep)) {
        const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
        if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    }
    return out;
}

// The LoRA options of a resolved config, validated (targets normalized).
LoraSpec lora_spec_of(const Json& cfg) {
    LoraSpec lora;
    lora.rank = cfg["lora_r"].get<std::int64_t>();
    lora.alpha = cfg["lora_alpha"].get<double>();
    lora.dropout = cfg["lora_dropout"].get<double>();
    lora.rslora = cfg["use_rslora"].get<bool>();
    const std::string targets = cfg["lora_targets"].get<std::string>();
    lora.targets = targets == "all" ? lora_target_names() : split_list(targets, ',');
    lora.validate();
    return lora;
}

// The base weights' dtype: auto is bf16 on CUDA, fp32 on the CPU.
torch::ScalarType weights_dtype(const Json& cfg, torch::DeviceType device) {
    const std::string dt = cfg["dtype"].get<std::string>();
    return dt == "bf16" || (dt == "auto" && device == torch::kCUDA) ? torch::kBFloat16
                                                                    : torch::kFloat32;
}

using Samples = std::shared_ptr<const std::vector<TokenizedSample>>;

class ChatSource : public BatchSource {
  public:
    ChatSource(Samples samples, int batch, std::int64_t seed, std::int64_t pad, int rank,
               int world_size)
        : samples_(std::move(samples)),
          batch_(batch),
          seed_(seed),
          pad_(pad),
          rank_(rank),
          world_size_(world_size) {}
    std::int64_t batches_per_epoch() const override {
        return (static_cast<std::int64_t>(samples_->size()) + batch_ - 1) / batch_;
    }
    std::int64_t items_per_epoch() const override {
        return static_cast<std::int64_t>(samples_->size());
    }
    void start_epoch(int epoch, std::int64_t index) override {
        // The same order on every platform (std::shuffle differs between standard libraries),
        // so a resumed run sees the batches it would have seen.
        data::Rng rng(data::derive_seed(
            {static_cast<std::uint64_t>(seed_), 0xC4A7ull, static_cast<std::uint64_t>(epoch)}));
        order_ = data::random_permutation(static_cast<std::int64_t>(samples_->size()), rng);
        next_ = index;
    }
    std::optional<Batch> next() override {
        if (next_ >= batches_per_epoch()) return std::nullopt;
        const std::int64_t global_begin = next_ * batch_;
        const std::int64_t global_end =
            std::min<std::int64_t>(global_begin + batch_, static_cast<std::int64_t>(order_.size()));
        // This rank's slice of the global batch (all of it for a single process).
        const auto [begin, end] = shard_range(global_begin, global_end, rank_, world_size_);
        std::vector<const TokenizedSample*> picked;
        for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i)
            picked.push_back(&(*samples_)[static_cast<std::size_t>(order_[i])]);
        ++next_;
        Batch b;
        b.size = static_cast<std::int64_t>(picked.size());
        b.data = collate(picked, pad_);
        return b;
    }

  private:
    Samples samples_;
    int batch_;
    std::int64_t seed_, pad_;
    int rank_, world_size_;
    std::vector<std::int64_t> order_;
    std::int64_t next_ = 0;
};

class LlmLoraTask : public engine::Task {
  public:
    OptionSchema schema() const override {
        OptionSchema s(kLlmTaskId, "LLM LoRA fine-tuning (Llama family)");
        engine::TrainDefaults d;
        d.epochs = 3;
        d.batch = 4;
        d.nbs = 4;
        d.lr0 = 2e-4;
        d.lrf = 0.1;
        d.momentum = 0.9;
        d.weight_decay = 0.0;
        d.warmup_epochs = 0.0;
        d.optimizer = "AdamW";
        d.grad_clip = 1.0;
        d.patience = 0;
        d.checkpoint_steps = 200;
        d.cos_lr = true;
        // LoRA runs keep no weight EMA (it would copy the whole base model) and use bf16 weights
        // on CUDA instead of fp16 autocast.
        d.ema = false;
        d.amp = false;
        engine::add_training_options(s, d);
        const std::string g_model = "model", g_data = "data", g_lora = "lora", g_sample = "samples";
        auto req = option_spec(
            "model", OptionType::Path, "",
            "base model: a Hugging Face folder (config.json + safetensors) or a llama2.c .bin",
            g_model);
        req.required = true;
        s.add(req);
        s.add(option_spec(
            "tokenizer", OptionType::Path, "",
            "tokenizer.json / tokenizer.model or their folder (default: the model folder)",
            g_model));
        s.add(option_spec("dtype", OptionType::Choice, "auto",
                          "weights dtype: auto is bf16 on CUDA, fp32 on CPU", g_model, {}, {},
                          {"auto", "fp32", "bf16"}));
        s.add(option_spec("quantize", OptionType::Choice, "none",
                          "base weights of the decoder projections: none, or nf4 (QLoRA: 4-bit "
                          "NormalFloat with double quantization, about 3.9x less weight memory)",
                          g_model, {}, {}, {"none", "nf4"}));
        s.add(option_spec("export_merged", OptionType::Boolean, false,
                          "also write the merged model in Hugging Face layout (artifacts/merged)",
                          g_model));
        auto d_req = option_spec("data", OptionType::Path, "",
                                 "training data: alpaca or sharegpt JSON / JSONL", g_data);
        d_req.required = true;
        s.add(d_req);
        s.add(option_spec("format", OptionType::Choice, "auto", "data format", g_data, {}, {},
                          {"auto", "alpaca", "sharegpt"}));
        s.add(option_spec("val_data", OptionType::Path, "",
                          "validation data (default: val_split of the training data)", g_data));
        s.add(option_spec("val_split", OptionType::Number, 0.1,
                          "fraction held out for validation when no val_data", g_data, 0, 0.9));
        std::vector<std::string> templates{"auto"};
        for (const auto& name : data::chat_template_names())
            templates.push_back(name);
        s.add(option_spec("template", OptionType::Choice, "auto",
                          "chat template: auto reads the model's own (tokenizer_config.json); "
                          "llama-3 when it has none",
                          g_data, {}, {}, templates));
        s.add(option_spec("cutoff_len", OptionType::Integer, 1024,
                          "maximum tokens per sample (longer ones are cut)", g_data, 8, 1 << 20));
        s.add(option_spec("train_on_prompt", OptionType::Boolean, false,
                          "take the loss on prompt tokens too", g_data));
        s.add(option_spec("packing", OptionType::Boolean, false,
                          "pack several samples into each cutoff_len sequence", g_data));
        s.add(option_spec("lora_r", OptionType::Integer, 8, "LoRA rank", g_lora, 1, 4096));
        s.add(option_spec("lora_alpha", OptionType::Number, 16, "LoRA alpha (scale alpha/r)",
                          g_lora, 1e-6, 1e6));
        s.add(option_spec("lora_dropout", OptionType::Number, 0.05, "dropout on the LoRA input",
                          g_lora, 0, 0.99));
        s.add(option_spec("lora_targets", OptionType::String, "q,v",
                          "comma-separated modules: q, k, v, o, gate, up, down (or all)", g_lora));
        s.add(option_spec("use_rslora", OptionType::Boolean, false,
                          "rank-stabilized scale alpha/sqrt(r)", g_lora));
        s.add(option_spec("gradient_checkpointing", OptionType::Boolean, false,
                          "recompute each layer in backward: far less activation memory for "
                          "about a third more compute",
                          g_lora));
        s.add(option_spec("sample_prompts", OptionType::String, "",
                          "prompts generated from after each validation, separated by |",
                          g_sample));
        s.add(option_spec("sample_tokens", OptionType::Integer, 48,
                          "new tokens per sample generation", g_sample, 1, 4096));
        s.add(option_spec(
            "sample_top_p", OptionType::Number, 0.0,
            "0: greedy samples; otherwise nucleus sampling with this top-p (temperature 0.8)",
            g_sample, 0, 1));
        return s;
    }

    void setup(const engine::TaskContext& c) override {
        ctx_ = c;
        const Json& cfg = c.config;
        model_path_ = path_from_utf8(cfg["model"].get<std::string>());
        if (cfg["model"].get<std::string>().empty()) throw InputError("model", "is required");
        // Only the config here: build_model (called more than once) reads the weights tensor by
        // tensor from the memory-mapped files, so the host never holds a second copy.
        config_ = read_base_config(model_path_);
        std::string tok = cfg["tokenizer"].get<std::string>();
        if (tok.empty()) {
            if (!std::filesystem::is_directory(model_path_))
                throw InputError(
                    "tokenizer",
                    "is required for a llama2.c model (give tokenizer.json or tokenizer.model)");
            tok = path_to_utf8(model_path_);
        }
        tokenizer_ = load_tokenizer(path_from_utf8(tok));
        if (tokenizer_->vocab_size() > config_.vocab_size)
            c.log("warning", "the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                                 " tokens but the model only " +
                                 std::to_string(config_.vocab_size));

        lora_ = lora_spec_of(cfg);
        gradient_checkpointing_ = cfg["gradient_checkpointing"].get<bool>();
        const std::string targets = cfg["lora_targets"].get<std::string>();
        quantize_nf4_ = cfg["quantize"].get<std::string>() == "nf4";
        dtype_ = weights_dtype(cfg, c.device.type());

        TokenizeOptions t;
        t.chat_template = chosen_template(cfg["template"].get<std::string>(), tok);
        t.cutoff_len = cfg["cutoff_len"].get<std::int64_t>();
        t.train_on_prompt = cfg["train_on_prompt"].get<bool>();
        t.eos_token = tokenizer_->eos_token.empty() ? "</s>" : tokenizer_->eos_token;
        template_ = t.chat_template;
        data::ChatLoadOptions lo;
        lo.format = data::parse_chat_format(cfg["format"].get<std::string>());
        const auto data_path = path_from_utf8(cfg["data"].get<std::string>());
        // Read once: parsed, and hashed for the run's provenance.
        const std::string data_text = read_file_bytes_limited(data_path, lo.max_file_bytes);
        data_hash_ = sha256_hex(data_text);
        auto train_rows = data::parse_chat_dataset(data_text, path_to_utf8(data_path), lo);
        data::throw_if_errors(train_rows, "data");
        std::vector<data::ChatSample> train = std::move(train_rows.samples), val;
        const std::string val_path = cfg["val_data"].get<std::string>();
        if (!val_path.empty()) {
            auto rows = data::load_chat_dataset(path_from_utf8(val_path), lo);
            data::throw_if_errors(rows, "val_data");
            val = std::move(rows.samples);
        } else {
            const double frac = cfg["val_split"].get<double>();
            auto n_val =
                static_cast<std::size_t>(std::floor(frac * static_cast<double>(train.size())));
            if (frac > 0 && n_val == 0 && train.size() >= 2) n_val = 1;
            data::Rng rng(data::derive_seed({static_cast<std::uint64_t>(c.seed), 0x5E1ull}));
            const auto order =
                data::random_permutation(static_cast<std::int64_t>(train.size()), rng);
            std::vector<bool> is_val(train.size(), false);
            for (std::size_t i = 0; i < n_val; ++i)
                is_val[static_cast<std::size_t>(order[i])] = true;
            std::vector<data::ChatSample> kept;
            for (std::size_t i = 0; i < train.size(); ++i)
                (is_val[i] ? val : kept).push_back(std::move(train[i]));
            train = std::move(kept);
        }
        auto tokenize_all = [&](const std::vector<data::ChatSample>& rows, const char* what) {
            std::vector<TokenizedSample> out;
            std::size_t dropped = 0;
            for (const auto& r : rows) {
                TokenizedSample s;
                try {
                    s = tokenize_chat(r, *tokenizer_, t);
                } catch (const InputError& e) {
                    throw InputError(r.where, e.what());
                }
                for (auto id : s.ids)
                    if (id >= config_.vocab_size)
                        throw InputError(r.where, "token id " + std::to_string(id) +
                                                      " is outside the model's vocabulary (" +
                                                      std::to_string(config_.vocab_size) +
                                                      "): tokenizer and model do not match");
                if (s.trained_tokens() == 0) {
                    ++dropped;
                    continue;
                }
                out.push_back(std::move(s));
            }
            if (dropped > 0)
                c.log("warning",
                      std::to_string(dropped) + " " + what +
                          " samples have no response tokens within cutoff_len and are skipped");
            return out;
        };
        auto train_tok = tokenize_all(train, "training");
        if (train_tok.empty()) throw InputError("data", "no usable training samples");
        if (cfg["packing"].get<bool>()) train_tok = pack_samples(train_tok, t.cutoff_len);
        train_ = std::make_shared<const std::vector<TokenizedSample>>(std::move(train_tok));
        val_ = tokenize_all(val, "validation");
        batch_ = cfg["batch"].get<int>();
        pad_id_ = tokenizer_->eos_id.value_or(0);
        prompts_ = split_list(cfg["sample_prompts"].get<std::string>(), '|');
        std::int64_t tokens = 0;
        for (const auto& s : *train_)
            tokens += static_cast<std::int64_t>(s.ids.size());
        c.log("info", "llm.lora: " + std::to_string(train_->size()) + " training sequences (" +
                          std::to_string(tokens) + " tokens), " + std::to_string(val_.size()) +
                          " validation samples; " + std::to_string(config_.num_hidden_layers) +
                          " layers, hidden " + std::to_string(config_.hidden_size) +
                          ", LoRA r=" + std::to_string(lora_.rank) + " on " + targets);
    }

    std::unique_ptr<BatchSource> train_data() override {
        return std::make_unique<ChatSource>(train_, batch_, ctx_.seed, pad_id_, ctx_.rank,
                                            ctx_.world_size);
    }

    std::shared_ptr<torch::nn::Module> build_model() override {
        LlamaForCausalLm m = load_base_model(model_path_, {ctx_.device, dtype_, quantize_nf4_});
        if (quantize_nf4_ && !quantize_logged_) {
            std::int64_t dense = 0, codes = 0;
            for (auto& [name, proj] : m->projections()) {
                dense += proj->nf4.numel() * c10::elementSize(dtype_);
                codes += proj->nf4.storage_bytes();
            }
            ctx_.log("info", "nf4: projection weights " + std::to_string(codes >> 20) +
                                 " MiB instead of " + std::to_string(dense >> 20) + " MiB");
            quantize_logged_ = true;
        }
        m->add_lora(lora_);  // adapters on the weights' device, fp32 under bf16 weights
        m->gradient_checkpointing = gradient_checkpointing_;
        return m.ptr();
    }

    // One group, `lora`: every adapter matrix (the base model is frozen), decayed alike and
    // warmed up from 0, as PEFT's trainer runs them; its learning rate is the metric lr/lora.
    engine::ParamGroups parameter_groups(torch::nn::Module& model) override {
        return {engine::trainable_parameters(model, "lora")};
    }

    std::vector<std::string> loss_names() const override { return {"loss"}; }

    engine::LossOutput compute_loss(torch::nn::Module& model, const Batch& batch) override {
        auto& m = dynamic_cast<LlamaForCausalLmImpl&>(model);
        const auto& b = std::any_cast<const TokenBatch&>(batch.data);
        const torch::Tensor loss = m.loss(b.tokens.to(ctx_.device), b.labels.to(ctx_.device));
        engine::LossOutput out{loss,
                               loss.detach().to(torch::kFloat32).reshape({1}).to(torch::kCPU)};
        // The loss is the mean over the tokens that have a label (the next token's): ranks of a
        // distributed run weigh in by their share of those.
        const auto time = b.labels.size(1);
        out.count = (b.labels.narrow(1, 1, time - 1) != -100).sum().item<double>();
        return out;
    }

    std::vector<std::string> eval_columns() const override {
        return {"val/loss", "val/perplexity"};
    }

    engine::EvalResult validate(torch::nn::Module& model) override {
        auto& m = dynamic_cast<LlamaForCausalLmImpl&>(model);
        torch::NoGradGuard no_grad;
        double total = 0;
        std::int64_t count = 0;
        // Without a validation set the training samples stand in (at most 64).
        std::vector<const TokenizedSample*> all;
        if (!val_.empty())
            for (const auto& s : val_)
                all.push_back(&s);
        else
            for (std::size_t i = 0; i < std::min<std::size_t>(64, train_->size()); ++i)
                all.push_back(&(*train_)[i]);
        for (std::size_t i = 0; i < all.size(); i += static_cast<std::size_t>(batch_)) {
            std::vector<const TokenizedSample*> part(
                all.begin() + static_cast<std::ptrdiff_t>(i),
                all.begin() + static_cast<std::ptrdiff_t>(
                                  std::min(all.size(), i + static_cast<std::size_t>(batch_))));
            const TokenBatch b = collate(part, pad_id_);
            // Token-weighted mean over the whole set.
            const std::int64_t targets = b.trained_tokens;
            if (targets == 0) continue;
            total += m.loss(b.tokens.to(ctx_.device), b.labels.to(ctx_.device)).item<double>() *
                     static_cast<double>(targets);
            count += targets;
        }
        const double loss = count > 0 ? total / static_cast<double>(count) : std::nan("");
        engine::EvalResult r;
        r.values = {{"val/loss", loss}, {"val/perplexity", std::exp(loss)}};
        r.fitness = std::isfinite(loss) ? -loss : -1e30;
        log_samples(m);
        return r;
    }

    std::optional<engine::MemoryEstimate> estimate_memory(
        const Json& cfg, torch::DeviceType device_type) const override {
        LlmMemoryPlan plan;
        plan.config = read_base_config(path_from_utf8(cfg["model"].get<std::string>()));
        plan.dtype = weights_dtype(cfg, device_type);
        plan.nf4 = cfg["quantize"].get<std::string>() == "nf4";
        plan.batch = cfg["batch"].get<std::int64_t>();
        plan.seq = cfg["cutoff_len"].get<std::int64_t>();
        plan.lora = lora_spec_of(cfg);
        plan.gradient_checkpointing = cfg["gradient_checkpointing"].get<bool>();
        engine::MemoryEstimate m = estimate_llm_memory(plan);
        m.advice =
            "quantize=nf4, gradient_checkpointing=true, a smaller batch or a shorter "
            "cutoff_len";
        return m;
    }

    // The base model is read again from `model` by build_model: weights files and checkpoints
    // hold the adapters only.
    bool rebuilds_frozen_weights() const override { return true; }

    Json weights_metadata() const override {
        return {{"lora_config", peft_adapter_config(lora_, path_to_utf8(model_path_)).dump()},
                {"model_config", config_.to_hf_json().dump()}};
    }
    std::string dataset_hash() const override { return data_hash_; }

    void save_artifacts(torch::nn::Module& best, const std::filesystem::path& dir) override {
        auto& m = dynamic_cast<LlamaForCausalLmImpl&>(best);
        save_peft_adapter(m, lora_, dir / "adapter", path_to_utf8(model_path_));
        ctx_.log("info", "adapter written to " + path_to_utf8(dir / "adapter"));
        if (ctx_.config["export_merged"].get<bool>()) {
            save_hf_folder(m, dir / "merged", dtype_, 4ull << 30);  // merges as it writes
            ctx_.log("info", "merged model written to " + path_to_utf8(dir / "merged"));
        }
    }

  private:
    // template=auto: the one the tokenizer's tokenizer_config.json writes (its markers), else
    // llama-3 when it has none; a template we cannot write is an error naming the option.
    data::ChatTemplate chosen_template(const std::string& option, const std::string& tokenizer) {
        if (option != "auto") return data::parse_chat_template(option);
        if (tokenizer_->chat_template.empty()) {
            ctx_.log("info", "template=auto: " + tokenizer +
                                 " has no chat_template in tokenizer_config.json; using llama-3");
            return data::ChatTemplate::Llama3;
        }
        const auto found = data::detect_chat_template(tokenizer_->chat_template);
        if (!found)
            throw InputError("template",
                             "auto: the chat_template of " + tokenizer +
                                 " is none of llama-3, chatml, mistral; give template= one of "
                                 "them (or alpaca)");
        ctx_.log("info", std::string("template=auto: ") + data::chat_template_name(*found) +
                             " (the model's chat_template)");
        return *found;
    }

    void log_samples(LlamaForCausalLmImpl& m) {
        if (prompts_.empty()) return;
        std::optional<std::int64_t> stop = tokenizer_->eos_id;
        if (template_ == data::ChatTemplate::Llama3) stop = tokenizer_->token_id("<|eot_id|>");
        if (template_ == data::ChatTemplate::ChatMl) stop = tokenizer_->token_id("<|im_end|>");
        data::TemplateOptions o;
        o.add_generation_prompt = true;
        for (const auto& p : prompts_) {
            const auto text =
                data::join_segments(data::render_chat({{data::ChatRole::User, p}}, template_, o));
            auto ids = tokenizer_->encode(text, false, true);
            GenerateOptions g;
            g.max_new_tokens = ctx_.config["sample_tokens"].get<std::int64_t>();
            g.top_p = ctx_.config["sample_top_p"].get<double>();
            g.temperature = g.top_p > 0 ? 0.8 : 0.0;
            g.eos_id = stop;
            g.seed = static_cast<std::uint64_t>(ctx_.seed);
            auto out = generate(m, ids, g);
            // The model's vocabulary may be larger than the tokenizer's (padded embeddings).
            std::erase_if(out, [&](std::int64_t id) { return id >= tokenizer_->vocab_size(); });
            const std::string generated = tokenizer_->decode(out, true);
            ctx_.log("info", "sample: " + p + " -> " + generated);
            if (ctx_.emit) ctx_.emit(make_sample({{"prompt", p}, {"text", generated}}));
        }
    }

    engine::TaskContext ctx_;
    std::filesystem::path model_path_;
    LlamaConfig config_;
    std::unique_ptr<Tokenizer> tokenizer_;
    LoraSpec lora_;
    bool gradient_checkpointing_ = false;
    bool quantize_nf4_ = false, quantize_logged_ = false;
    torch::ScalarType dtype_ = torch::kFloat32;
    data::ChatTemplate template_ = data::ChatTemplate::Llama3;
    Samples train_;
    std::vector<TokenizedSample> val_;
    int batch_ = 4;
    std::int64_t pad_id_ = 0;
    std::vector<std::string> prompts_;
    std::string data_hash_;
};

engine::RegisterTask registration({kLlmTaskId,
                                   "LLM LoRA fine-tuning",
                                   {"llm"},
                                   "llm",
                                   [] { return std::make_unique<LlmLoraTask>(); },
                                   "chat"});

}  // namespace

void ensure_llm_task_registered() {
    (void)&registration;
}

}  // namespace crucible::llm
