#include "plugins/sd_lora/sd_task.h"

#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/caption_dataset.h"
#include "core/engine/safetensors_torch.h"
#include "core/engine/schedule.h"
#include "core/engine/task.h"
#include "core/engine/train_options.h"
#include "core/engine/weights_file.h"
#include "plugins/sd_lora/checkpoint_io.h"
#include "plugins/sd_lora/lora.h"
#include "plugins/sd_lora/memory_estimate.h"
#include "plugins/sd_lora/sampler.h"
#include "plugins/sd_lora/scheduler.h"
#include "plugins/sd_lora/sd_batches.h"
#include "plugins/sd_lora/text_conditioning.h"

namespace crucible::sd {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> split_prompts(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto end = text.find('|', start);
        if (end == std::string::npos) end = text.size();
        std::string p = text.substr(start, end - start);
        const auto b = p.find_first_not_of(' ');
        const auto e = p.find_last_not_of(' ');
        if (b != std::string::npos) out.push_back(p.substr(b, e - b + 1));
        start = end + 1;
    }
    return out;
}

class SdLoraTask : public engine::Task {
  public:
    OptionSchema schema() const override {
        OptionSchema s(kSdLoraTaskId, "Stable Diffusion LoRA (1.x, SDXL)");
        engine::TrainDefaults d;
        d.epochs = 10;
        d.batch = 1;
        d.nbs = 1;
        d.lr0 = 1e-4;
        d.lrf = 1.0;
        d.momentum = 0.9;
        d.weight_decay = 1e-2;
        d.warmup_epochs = 0;
        d.warmup_bias_lr = 0;
        d.optimizer = "AdamW";
        d.grad_clip = 1.0;
        d.ema = false;  // an EMA of a LoRA lags far behind on short runs; off unless asked for
        d.patience = 0;
        d.checkpoint_steps = 500;
        engine::add_training_options(s, d);
        const std::string data = "data", model = "model", lora = "lora", train = "diffusion",
                          sample = "samples";
        using T = OptionType;
        s.add(option_spec("data", T::Path, "", "folder of images with .txt captions (kohya style)",
                          data));
        s.add(option_spec("caption_extension", T::String, ".txt", "caption file extension", data));
        s.add(option_spec("resolution", T::Integer, 512,
                          "training resolution (bucket area = resolution²)", data, 16, 4096));
        s.add(option_spec("enable_bucket", T::Boolean, true, "aspect-ratio buckets", data));
        s.add(option_spec("min_bucket_reso", T::Integer, 256, "smallest bucket side", data, 16,
                          4096));
        s.add(option_spec("max_bucket_reso", T::Integer, 1024, "largest bucket side", data, 16,
                          16384));
        s.add(option_spec("bucket_reso_steps", T::Integer, 64, "bucket side step in pixels", data,
                          8, 1024));
        s.add(option_spec("bucket_no_upscale", T::Boolean, false, "never enlarge small images",
                          data));
        s.add(option_spec("caption_dropout_rate", T::Number, 0.0,
                          "probability of training on an empty caption", data, 0, 1));
        s.add(option_spec("shuffle_caption", T::Boolean, false, "shuffle comma-separated tags",
                          data));
        s.add(option_spec("keep_tokens", T::Integer, 0, "leading tags that are never shuffled",
                          data, 0, 1000));
        s.add(option_spec("flip_aug", T::Boolean, false, "random horizontal flips", data));
        s.add(option_spec("cache_latents_to_disk", T::Boolean, true,
                          "keep encoded latents in the run folder for resumes", data));
        s.add(option_spec("model", T::Path, "",
                          "base model: a diffusers folder or a single-file .safetensors checkpoint",
                          model));
        s.add(option_spec("tokenizer", T::Path, "",
                          "folder with vocab.json and merges.txt (default: the model's tokenizer/)",
                          model));
        s.add(option_spec("base_precision", T::Choice, "fp32",
                          "precision of the frozen UNet and text encoders (the LoRA trains in "
                          "fp32): fp16 or bf16 halve their memory, as SDXL on a 24 GB card needs",
                          model, {}, {}, {"fp32", "fp16", "bf16"}));
        s.add(option_spec("clip_skip", T::Integer, 1,
                          "use the text encoder's N-th last layer (SD 1.x; SDXL always uses the "
                          "next-to-last)",
                          model, 1, 12));
        s.add(option_spec("network_dim", T::Integer, 8, "LoRA rank", lora, 1, 1024));
        s.add(option_spec("network_alpha", T::Number, 8.0, "LoRA alpha (scale alpha / rank)", lora,
                          1e-6, 1e6));
        s.add(option_spec("network_dropout", T::Number, 0.0, "dropout on the LoRA input", lora, 0,
                          0.99));
        s.add(option_spec("use_rslora", T::Boolean, false, "scale alpha / sqrt(rank)", lora));
        s.add(option_spec("train_text_encoder", T::Boolean, false,
                          "also train LoRA on the text encoder(s) (q/k/v/out_proj, fc1, fc2)",
                          lora));
        s.add(option_spec("unet_lr", T::Number, nullptr,
                          "learning rate of the UNet LoRA (empty: the run's lr0)", lora, 0, 10));
        s.add(option_spec("text_encoder_lr", T::Number, nullptr,
                          "learning rate of the text-encoder LoRA (empty: the run's lr0)", lora, 0,
                          10));
        s.add(option_spec("lora_format", T::Choice, "kohya", "output layout", lora, {}, {},
                          {"kohya", "peft", "both"}));
        s.add(option_spec("save_precision", T::Choice, "fp16", "dtype of the LoRA file", lora, {},
                          {}, {"fp16", "bf16", "fp32"}));
        s.add(option_spec("output_name", T::String, "lora", "LoRA file name (without .safetensors)",
                          lora));
        s.add(option_spec("prediction_type", T::Choice, "epsilon", "what the UNet predicts", train,
                          {}, {}, {"epsilon", "v_prediction"}));
        s.add(option_spec("min_snr_gamma", T::Number, 0.0,
                          "min-SNR loss weighting gamma (0: off; 5 is common)", train, 0, 100));
        s.add(option_spec("noise_offset", T::Number, 0.0, "per-channel noise offset", train, 0, 1));
        s.add(option_spec("gradient_checkpointing", T::Boolean, false,
                          "recompute UNet (and text-encoder) blocks in backward: less memory for "
                          "activations, about one more forward pass of time",
                          train));
        s.add(option_spec("sample_every_n_steps", T::Integer, 0,
                          "render sample images every N steps (0: only at the end)", sample, 0,
                          1e9));
        s.add(option_spec("sample_prompts", T::String, "",
                          "prompts separated by '|' (default: the first caption)", sample));
        s.add(option_spec("sample_sampler", T::Choice, "ddim", "sampler of the sample images",
                          sample, {}, {}, {"ddim", "euler"}));
        s.add(option_spec("sample_steps", T::Integer, 20, "sampler steps per sample", sample, 1,
                          1000));
        s.add(option_spec("guidance_scale", T::Number, 7.5, "classifier-free guidance scale",
                          sample, 1, 50));
        s.add(option_spec("sample_seed", T::Integer, 1234, "seed of the sample noise", sample, 0,
                          4294967295.0));
        return s;
    }

    void setup(const engine::TaskContext& c) override {
        ctx_ = c;
        const Json& cfg = c.config;
        const std::string data_path = cfg.at("data").get<std::string>();
        if (data_path.empty()) throw InputError("data", "a caption folder is required");
        const std::string model_path = cfg.at("model").get<std::string>();
        if (model_path.empty()) throw InputError("model", "a base model is required");

        data::CaptionFolderOptions fo;
        fo.caption_extension = cfg.at("caption_extension").get<std::string>();
        data::CaptionDataset ds = data::load_caption_folder(path_from_utf8(data_path), fo);
        for (const auto& p : ds.problems)
            c.log("warning", "skipped " + path_to_utf8(p.path) + ": " + p.message);
        c.log("info", "data: " + std::to_string(ds.items.size()) + " images, " +
                          std::to_string(ds.missing_captions) + " without caption");
        first_caption_ = ds.items.front().caption;
        tag_frequency_ = Json::object();
        for (const auto& [folder, tags] : ds.tag_frequency)
            tag_frequency_[folder] = tags;

        SdModels m = load_sd_models(path_from_utf8(model_path));
        unet_ = m.unet;
        vae_ = m.vae;
        text_ = m.text_encoder;
        text_2_ = m.text_encoder_2;
        sdxl_ = unet_->config.text_time_conditioning();
        check_sdxl_parts(m, cfg, model_path);
        std::optional<ClipTokenizer> tokenizer = std::move(m.tokenizer);
        const std::string tok = cfg.at("tokenizer").get<std::string>();
        if (!tok.empty()) {
            tokenizer = load_tokenizer_folder(path_from_utf8(tok));
            if (!tokenizer) throw InputError(tok, "no vocab.json and merges.txt in this folder");
        } else if (!tokenizer) {
            throw InputError("tokenizer",
                             "the model has no tokenizer/ folder; give one with tokenizer=");
        }
        if (sdxl_ && !m.tokenizer_2) {
            // SDXL's second tokenizer is the first's vocabulary padding with "!" (a single-file
            // checkpoint has neither).
            m.tokenizer_2 = *tokenizer;
            m.tokenizer_2->set_pad_token("!", "tokenizer");
            c.log("info",
                  "the second text encoder reads the first tokenizer's ids, padded with "
                  "'!' as SDXL's tokenizer_2 pads");
        }
        // The VAE stays fp32 (SDXL's overflows in fp16); it encodes once and decodes samples.
        const torch::ScalarType base_dtype = base_precision(cfg);
        for (torch::nn::Module* mod : frozen_parts()) {
            for (auto& p : mod->parameters())
                p.set_requires_grad(false);
            mod->eval();
            if (mod == vae_.get())
                mod->to(c.device);
            else
                mod->to(c.device, base_dtype);
        }
        targets_ = unet_lora_targets(*unet_);
        train_text_ = cfg.at("train_text_encoder").get<bool>();
        if (train_text_ && !sdxl_) text_targets_ = text_encoder_lora_targets(*text_);
        if (train_text_ && sdxl_) {
            text_targets_ = text_encoder_lora_targets(*text_, "lora_te1");
            const auto second = text_encoder_lora_targets(*text_2_, "lora_te2");
            text_targets_.insert(text_targets_.end(), second.begin(), second.end());
        }
        const bool checkpointing = cfg.at("gradient_checkpointing").get<bool>();
        unet_->gradient_checkpointing = checkpointing;
        text_->gradient_checkpointing = checkpointing && train_text_;
        if (text_2_) text_2_->gradient_checkpointing = checkpointing && train_text_;
        encoders_ = std::make_unique<TextEncoders>(text_, std::move(*tokenizer), text_2_,
                                                   std::move(m.tokenizer_2),
                                                   cfg.at("clip_skip").get<int>(), c.device);
        encoders_->set_trainable(train_text_);
        lora_.rank = cfg.at("network_dim").get<std::int64_t>();
        lora_.alpha = cfg.at("network_alpha").get<double>();
        lora_.dropout = cfg.at("network_dropout").get<double>();
        lora_.rslora = cfg.at("use_rslora").get<bool>();

        SdDataOptions o;
        o.buckets.resolution = cfg.at("resolution").get<int>();
        o.buckets.min_size = std::min(cfg.at("min_bucket_reso").get<int>(), o.buckets.resolution);
        o.buckets.max_size = std::max(cfg.at("max_bucket_reso").get<int>(), o.buckets.resolution);
        o.buckets.step = cfg.at("bucket_reso_steps").get<int>();
        o.buckets.no_upscale = cfg.at("bucket_no_upscale").get<bool>();
        o.buckets.enabled = cfg.at("enable_bucket").get<bool>();
        o.captions.caption_dropout = cfg.at("caption_dropout_rate").get<double>();
        o.captions.shuffle_tags = cfg.at("shuffle_caption").get<bool>();
        o.captions.keep_tokens = cfg.at("keep_tokens").get<int>();
        o.flip = cfg.at("flip_aug").get<bool>();
        o.batch = cfg.at("batch").get<int>();
        if (cfg.at("cache_latents_to_disk").get<bool>()) o.cache_dir = c.run_dir / "latent_cache";
        data_ =
            std::make_unique<SdTrainingData>(std::move(ds), o, static_cast<std::uint64_t>(c.seed));
        const double s = data_->cache_latents(*vae_, c.device,
                                              [&](const std::string& m2) { c.log("info", m2); });
        cache_seconds_ = s;

        v_prediction_ = cfg.at("prediction_type").get<std::string>() == "v_prediction";
        min_snr_gamma_ = cfg.at("min_snr_gamma").get<double>();
        noise_offset_ = cfg.at("noise_offset").get<double>();
        clip_skip_ = cfg.at("clip_skip").get<int>();
        sample_every_ = cfg.at("sample_every_n_steps").get<std::int64_t>();
        sampler_ = sampler_kind(cfg.at("sample_sampler").get<std::string>());
        prompts_ = split_prompts(cfg.at("sample_prompts").get<std::string>());
        if (prompts_.empty()) prompts_.push_back(first_caption_);
        set_learning_rates(cfg);
        std::ostringstream line;
        line << (sdxl_ ? "SDXL " : "SD 1.x ") << "LoRA: " << targets_.size() << " UNet modules (lr "
             << unet_lr_ << ")";
        if (train_text_)
            line << ", " << text_targets_.size() << " text-encoder modules (lr " << text_lr_ << ")";
        line << ", rank " << lora_.rank << ", alpha " << lora_.alpha
             << (checkpointing ? ", gradient checkpointing" : "") << ", base model in "
             << cfg.at("base_precision").get<std::string>();
        c.log("info", line.str());
    }

    // The step's peak from the model's configs (no weights read): core/engine/memory_estimate.h.
    std::optional<engine::MemoryEstimate> estimate_memory(
        const Json& cfg, torch::DeviceType device_type) const override {
        const std::string model = cfg.at("model").get<std::string>();
        if (model.empty()) return std::nullopt;
        const SdModelConfigs configs = read_sd_configs(path_from_utf8(model));
        SdMemoryPlan plan;
        plan.unet = configs.unet;
        plan.text = configs.text;
        plan.text_2 = configs.text_2;
        plan.vae = configs.vae;
        plan.base_dtype = base_precision(cfg);
        plan.amp = cfg.at("amp").get<bool>() && device_type == torch::kCUDA;
        plan.batch = cfg.at("batch").get<std::int64_t>();
        // Buckets hold at most resolution² pixels: the square bound of the largest.
        plan.height = plan.width = cfg.at("resolution").get<std::int64_t>();
        plan.rank = cfg.at("network_dim").get<std::int64_t>();
        plan.train_text_encoder = cfg.at("train_text_encoder").get<bool>();
        plan.gradient_checkpointing = cfg.at("gradient_checkpointing").get<bool>();
        engine::MemoryEstimate m = estimate_sd_memory(plan);
        m.advice =
            "base_precision=bf16 (or fp16), gradient_checkpointing=true, a smaller batch or "
            "resolution";
        return m;
    }

    std::unique_ptr<engine::BatchSource> train_data() override {
        return data_->batches(ctx_.rank, ctx_.world_size);
    }

    std::shared_ptr<torch::nn::Module> build_model() override { return make_network().ptr(); }

    std::vector<std::string> loss_names() const override { return {"loss"}; }

    engine::LossOutput compute_loss(torch::nn::Module& model, const engine::Batch& batch) override {
        auto& net = dynamic_cast<LoraNetworkImpl&>(model);
        ++batches_seen_;
        if (sample_every_ > 0 && batches_seen_ % sample_every_ == 0)
            render_samples(net, "step" + std::to_string(batches_seen_));
        net.install();
        const auto& b = std::any_cast<const SdBatch&>(batch.data);
        const torch::Tensor loss = diffusion_loss(b, b.noise_seed, {});
        return {loss, loss.detach().reshape({1}).to(torch::kCPU)};
    }

    std::vector<std::string> eval_columns() const override { return {"val/loss"}; }

    engine::EvalResult validate(torch::nn::Module& model) override {
        auto& net = dynamic_cast<LoraNetworkImpl&>(model);
        net.install();
        torch::NoGradGuard no_grad;
        // A fixed probe: the first batches of epoch 0 with fixed noise and spread timesteps, so
        // values of different epochs compare.
        const auto batches = data_->epoch_batches(0);
        double total = 0;
        std::int64_t n = 0;
        for (std::size_t i = 0; i < batches.size() && n < 8; ++i) {
            const SdBatch b = data_->make_batch(batches[i], 0, static_cast<std::int64_t>(i));
            std::vector<std::int64_t> ts;
            for (std::size_t k = 0; k < b.captions.size(); ++k)
                ts.push_back(
                    static_cast<std::int64_t>((n + static_cast<std::int64_t>(k)) * 389 % 1000));
            total += diffusion_loss(b, 0xC0FFEEull + i, torch::tensor(ts)).item<double>() *
                     static_cast<double>(b.captions.size());
            n += static_cast<std::int64_t>(b.captions.size());
        }
        const double loss = n ? total / static_cast<double>(n) : 0.0;
        engine::EvalResult r;
        r.values = {{"val/loss", loss}};
        r.fitness = -loss;
        return r;
    }

    // `unet` and `text_encoder` (when it trains) at unet_lr / text_encoder_lr: the metrics
    // lr/unet and lr/text_encoder.
    engine::ParamGroups parameter_groups(torch::nn::Module& model) override {
        return lora_parameter_groups(dynamic_cast<LoraNetworkImpl&>(model), unet_factor_,
                                     text_factor_);
    }

    Json weights_metadata() const override { return {{"ss_network_module", "networks.lora"}}; }

    std::string dataset_hash() const override { return ""; }

    void save_artifacts(torch::nn::Module& best, const fs::path& dir) override {
        auto& best_net = dynamic_cast<LoraNetworkImpl&>(best);
        const std::string name = ctx_.config.at("output_name").get<std::string>();
        if (name.empty() || name.find_first_of("/\\") != std::string::npos || name == "." ||
            name == "..")
            throw InputError("output_name", "must be a plain file name");
        const fs::path lora_dir = dir / "lora";
        fs::create_directories(lora_dir);
        // The final LoRA is the last epoch's; best (lowest validation loss) goes beside it.
        auto last = make_network();
        const fs::path last_file = dir / "weights" / "last.safetensors";
        if (fs::exists(last_file)) engine::load_module_safetensors(*last, last_file);
        const std::string format = ctx_.config.at("lora_format").get<std::string>();
        const std::string base = ctx_.config.at("model").get<std::string>();
        if (format != "peft") {
            write_kohya(*last, lora_dir / path_from_utf8(name + ".safetensors"));
            write_kohya(best_net, lora_dir / path_from_utf8(name + "-best.safetensors"));
        }
        if (format != "kohya") {
            // PEFT keeps one model per adapter folder: the UNet's in <name>-peft/, the text
            // encoder's in its text_encoder/ subfolder (keys base_model.model.text_model...), as a
            // diffusers pipeline folder holds one folder per model.
            const fs::path peft = lora_dir / path_from_utf8(name + "-peft");
            last->save_peft(peft, base, "lora_unet");
            if (train_text_ && !sdxl_) last->save_peft(peft / "text_encoder", base, "lora_te");
            if (train_text_ && sdxl_) {
                last->save_peft(peft / "text_encoder", base, "lora_te1");
                last->save_peft(peft / "text_encoder_2", base, "lora_te2");
            }
        }
        ctx_.log("info", "LoRA written to " + path_to_utf8(lora_dir));
        render_samples(*last, "final");
    }

    double cache_seconds() const { return cache_seconds_; }

  private:
    // The adapters of the UNet (and of the text encoder when it trains) on the run's device; the
    // same layout every call (model, EMA copy, export).
    LoraNetwork make_network() const {
        std::vector<LoraTarget> all = targets_;
        all.insert(all.end(), text_targets_.begin(), text_targets_.end());
        auto net = LoraNetwork(all, lora_);
        net->to(ctx_.device);
        return net;
    }

    // unet_lr / text_encoder_lr as factors of the learning rate the engine's optimizer runs with
    // (lr0, or what optimizer=auto picks, by the engine's own rule): the groups' lr_factor.
    void set_learning_rates(const Json& cfg) {
        base_lr_ = engine::choose_optimizer(
                       cfg.at("optimizer").get<std::string>(), data_->items_per_epoch(),
                       cfg.at("batch").get<int>(), cfg.at("nbs").get<int>(),
                       cfg.at("epochs").get<int>(), num_classes(), cfg.at("lr0").get<double>(),
                       cfg.at("momentum").get<double>(), cfg.at("warmup_bias_lr").get<double>())
                       .lr;
        auto lr_of = [&](const char* key) {
            return cfg.at(key).is_null() ? base_lr_ : cfg.at(key).get<double>();
        };
        // A rate equal to the run's is a factor of exactly 1, whatever lr0 is.
        auto factor_of = [&](double lr) {
            if (lr == base_lr_) return 1.0;
            if (!(base_lr_ > 0))
                throw InputError("lr0", "must be above 0 when unet_lr or text_encoder_lr differ");
            return lr / base_lr_;
        };
        unet_lr_ = lr_of("unet_lr");
        text_lr_ = train_text_ ? lr_of("text_encoder_lr") : 0.0;
        unet_factor_ = factor_of(unet_lr_);
        text_factor_ = train_text_ ? factor_of(text_lr_) : 1.0;
    }

    // The models that never train (the LoRA adapters hold everything that does).
    std::vector<torch::nn::Module*> frozen_parts() {
        std::vector<torch::nn::Module*> out = {unet_.get(), vae_.get(), text_.get()};
        if (text_2_) out.push_back(text_2_.get());
        return out;
    }

    static torch::ScalarType base_precision(const Json& cfg) {
        const std::string p = cfg.at("base_precision").get<std::string>();
        return p == "fp16" ? torch::kFloat16 : p == "bf16" ? torch::kBFloat16 : torch::kFloat32;
    }

    // An SDXL UNet comes with its second text encoder, and SD 1.x's without one.
    void check_sdxl_parts(const SdModels& m, const Json& cfg, const std::string& model_path) const {
        if (sdxl_ && !m.text_encoder_2)
            throw InputError(model_path,
                             "an SDXL UNet (text_time conditioning) needs the second "
                             "text encoder in text_encoder_2/");
        if (!sdxl_ && m.text_encoder_2)
            throw InputError(model_path,
                             "text_encoder_2/ beside a UNet without SDXL's text_time "
                             "conditioning: not an SD 1.x or SDXL model");
        if (sdxl_ && cfg.at("clip_skip").get<int>() != 1)
            throw InputError("clip_skip",
                             "SDXL always conditions on the next-to-last layer of "
                             "both text encoders; leave clip_skip at 1");
    }

    // Epsilon / v MSE for one batch; `timesteps` fixed for validation, else drawn from the seed.
    torch::Tensor diffusion_loss(const SdBatch& b, std::uint64_t seed, torch::Tensor timesteps) {
        auto gen = at::detail::createCPUGenerator(seed);
        const auto cpu = torch::TensorOptions().dtype(torch::kFloat32);
        const auto shape = b.latent_mean.sizes();
        const auto bsz = shape[0];
        // Drawn for the whole global batch, in one process's order; a rank keeps its rows.
        std::vector<std::int64_t> global = shape.vec();
        global[0] = b.global_rows > 0 ? b.global_rows : bsz;
        const auto mine = [&](const torch::Tensor& t) { return t.narrow(0, b.first, bsz); };
        const torch::Tensor z = mine(torch::randn(global, gen, cpu)).to(ctx_.device);
        const torch::Tensor latents =
            (b.latent_mean + b.latent_std * z) * vae_->config.scaling_factor;
        torch::Tensor noise = torch::randn(global, gen, cpu);
        if (noise_offset_ > 0)
            noise = noise + noise_offset_ * torch::randn({global[0], shape[1], 1, 1}, gen, cpu);
        noise = mine(noise).to(ctx_.device);
        torch::Tensor t = timesteps.defined()
                              ? timesteps
                              : mine(torch::randint(0, schedule_.steps(), {global[0]}, gen,
                                                    torch::TensorOptions().dtype(torch::kLong)));
        t = t.to(ctx_.device);
        const torch::Tensor noisy = schedule_.add_noise(latents, noise, t);
        const TextConditioning text = encoders_->encode(b.captions);
        const torch::Tensor pred = unet_->forward(noisy, t, text.context, text.pooled,
                                                  sdxl_ ? b.time_ids : torch::Tensor());
        const torch::Tensor target = v_prediction_ ? schedule_.velocity(latents, noise, t) : noise;
        torch::Tensor per = (pred.to(torch::kFloat32) - target).pow(2).mean({1, 2, 3});
        if (min_snr_gamma_ > 0) {
            const torch::Tensor snr = schedule_.snr(t).to(per.device());
            const torch::Tensor clipped = torch::clamp_max(snr, min_snr_gamma_);
            per = per * (v_prediction_ ? clipped / (snr + 1) : clipped / snr);
        }
        return per.mean();
    }

    void render_samples(LoraNetworkImpl& net, const std::string& tag) {
        if (prompts_.empty()) return;
        const bool was_training = net.is_training();
        net.eval();
        net.install();
        torch::NoGradGuard no_grad;
        const fs::path out = ctx_.artifacts_dir / "samples";
        fs::create_directories(out);
        const int res = ctx_.config.at("resolution").get<int>();
        const std::int64_t f =
            1ll << (static_cast<std::int64_t>(vae_->config.block_out_channels.size()) - 1);
        const std::int64_t side = std::max<std::int64_t>(8, res / f);
        const TextConditioning uncond = encoders_->unconditional(1);
        // SDXL: rendered as an uncropped image of the sample size.
        const double px = static_cast<double>(side * f);
        const torch::Tensor time_ids =
            sdxl_ ? torch::tensor({px, px, 0.0, 0.0, px, px}, torch::kFloat32)
                        .reshape({1, kSdxlTimeIds})
                        .to(ctx_.device)
                  : torch::Tensor();
        for (std::size_t i = 0; i < prompts_.size(); ++i) {
            const TextConditioning cond = encoders_->encode({prompts_[i]});
            auto gen = at::detail::createCPUGenerator(
                ctx_.config.at("sample_seed").get<std::uint64_t>() + i);
            const torch::Tensor noise = torch::randn({1, unet_->config.in_channels, side, side},
                                                     gen, torch::TensorOptions())
                                            .to(ctx_.device);
            NoisePredictor predict = guided_unet(*unet_, cond, uncond, time_ids,
                                                 ctx_.config.at("guidance_scale").get<double>());
            if (v_prediction_) predict = epsilon_from_velocity(schedule_, std::move(predict));
            const torch::Tensor latents =
                sample_latents(sampler_, schedule_, predict, noise,
                               ctx_.config.at("sample_steps").get<std::int64_t>());
            const torch::Tensor rgb = decode_to_rgb8(*vae_, latents / vae_->config.scaling_factor);
            const fs::path file = out / path_from_utf8(tag + "_" + std::to_string(i) + ".png");
            write_rgb8_png(file, rgb[0]);
            ctx_.log("info", "sample " + path_to_utf8(file.lexically_relative(ctx_.run_dir)) +
                                 ": " + prompts_[i]);
            if (ctx_.emit) {
                // Named relative to artifacts/, as the agent lists and serves them.
                const auto rel = file.lexically_relative(ctx_.artifacts_dir).generic_u8string();
                const std::string name(rel.begin(), rel.end());
                ctx_.emit(make_artifact(name, "image"));
                ctx_.emit(make_sample({{"prompt", prompts_[i]}, {"image", name}}));
            }
        }
        if (was_training) net.train();
    }

    void write_kohya(LoraNetworkImpl& net, const fs::path& file) {
        const Json& cfg = ctx_.config;
        const std::string prec = cfg.at("save_precision").get<std::string>();
        const auto dtype = prec == "fp16"   ? torch::kFloat16
                           : prec == "bf16" ? torch::kBFloat16
                                            : torch::kFloat32;
        auto number = [](double v) {
            std::ostringstream out;
            out << v;
            return out.str();
        };
        const auto batches = data_->epoch_batches(0).size();
        std::map<std::string, std::string> meta = {
            {"ss_network_module", "networks.lora"},
            {"ss_network_dim", std::to_string(lora_.rank)},
            {"ss_network_alpha", Json(lora_.alpha).dump()},
            {"ss_network_dropout", Json(lora_.dropout).dump()},
            {"ss_learning_rate", number(base_lr_)},
            {"ss_unet_lr", number(unet_lr_)},
            {"ss_text_encoder_lr", train_text_ ? number(text_lr_) : "0"},
            {"ss_network_train_unet_only", train_text_ ? "False" : "True"},
            {"ss_num_train_images", std::to_string(data_->items_per_epoch())},
            {"ss_num_epochs", std::to_string(cfg.at("epochs").get<int>())},
            {"ss_max_train_steps",
             std::to_string(static_cast<std::size_t>(cfg.at("epochs").get<int>()) * batches)},
            {"ss_batch_size_per_device", std::to_string(cfg.at("batch").get<int>())},
            {"ss_seed", std::to_string(ctx_.seed)},
            {"ss_base_model_version", sdxl_ ? "sdxl_base_v1-0" : "sd_v1"},
            {"ss_v2", "False"},
            {"ss_sd_model_name",
             path_to_utf8(path_from_utf8(cfg.at("model").get<std::string>()).filename())},
            {"ss_resolution", "(" + std::to_string(cfg.at("resolution").get<int>()) + ", " +
                                  std::to_string(cfg.at("resolution").get<int>()) + ")"},
            {"ss_enable_bucket", cfg.at("enable_bucket").get<bool>() ? "True" : "False"},
            {"ss_caption_dropout_rate", Json(cfg.at("caption_dropout_rate")).dump()},
            {"ss_shuffle_caption", cfg.at("shuffle_caption").get<bool>() ? "True" : "False"},
            {"ss_keep_tokens", std::to_string(cfg.at("keep_tokens").get<int>())},
            {"ss_flip_aug", cfg.at("flip_aug").get<bool>() ? "True" : "False"},
            {"ss_clip_skip", std::to_string(clip_skip_)},
            {"ss_min_snr_gamma", Json(min_snr_gamma_).dump()},
            {"ss_noise_offset", Json(noise_offset_).dump()},
            {"ss_v_parameterization", v_prediction_ ? "True" : "False"},
            {"ss_optimizer", cfg.at("optimizer").get<std::string>()},
            {"ss_output_name", cfg.at("output_name").get<std::string>()},
            {"ss_tag_frequency", tag_frequency_.dump()},
            {"ss_training_comment", "trained with Crucible"},
        };
        if (sdxl_) meta["modelspec.architecture"] = "stable-diffusion-xl-v1-base/lora";
        save_kohya_lora(file, net.kohya_state(dtype), meta);
    }

    engine::TaskContext ctx_;
    UNet unet_{nullptr};
    AutoencoderKL vae_{nullptr};
    ClipTextModel text_{nullptr}, text_2_{nullptr};  // text_2_: SDXL's second encoder
    std::unique_ptr<TextEncoders> encoders_;
    bool sdxl_ = false;
    std::vector<LoraTarget> targets_, text_targets_;
    LoraOptions lora_;
    bool train_text_ = false;
    double base_lr_ = 1, unet_lr_ = 1, text_lr_ = 0;
    double unet_factor_ = 1, text_factor_ = 1;  // learning rate / the optimizer's
    SamplerKind sampler_ = SamplerKind::Ddim;
    NoiseSchedule schedule_;
    std::unique_ptr<SdTrainingData> data_;
    std::string first_caption_;
    Json tag_frequency_;
    std::vector<std::string> prompts_;
    bool v_prediction_ = false;
    double min_snr_gamma_ = 0, noise_offset_ = 0, cache_seconds_ = 0;
    int clip_skip_ = 1;
    std::int64_t sample_every_ = 0, batches_seen_ = 0;
};

engine::RegisterTask registration({kSdLoraTaskId,
                                   "Stable Diffusion LoRA (1.x, SDXL)",
                                   {"sd_lora", "sd"},
                                   "sd_lora",
                                   [] { return std::make_unique<SdLoraTask>(); },
                                   "captions"});

}  // namespace

void ensure_sd_lora_registered() {
    (void)&registration;
}

}  // namespace crucible::sd
