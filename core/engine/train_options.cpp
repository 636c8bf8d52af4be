#include "core/engine/train_options.h"

namespace crucible::engine {

void add_training_options(OptionSchema& schema, const TrainDefaults& d) {
    const std::string train = "train", optim = "optimizer", run = "run", ckpt = "checkpoints";
    schema.add(integer_option("epochs", d.epochs, 1, 100000, "number of epochs to train", train));
    schema.add(integer_option("batch", d.batch, 1, 65536, "batch size", train));
    schema.add(integer_option(
        "patience", d.patience, 0, 100000,
        "epochs without fitness improvement before early stopping (0: never stop early)", train));
    schema.add(integer_option(
        "nbs", d.nbs, 1, 65536,
        "nominal batch size: gradients accumulate over max(round(nbs/batch),1) batches", train));
    OptionSpec opt =
        text_option("optimizer", d.optimizer, "optimizer; auto picks SGD or AdamW by run length",
                    optim, OptionType::Choice);
    opt.choices = {"auto", "SGD", "AdamW", "Adam"};
    schema.add(opt);
    schema.add(number_option("lr0", d.lr0, 0, 10, "initial learning rate", optim));
    schema.add(
        number_option("lrf", d.lrf, 0, 1, "final learning rate as a fraction of lr0", optim));
    schema.add(number_option("momentum", d.momentum, 0, 1, "SGD momentum / Adam beta1", optim));
    schema.add(number_option("weight_decay", d.weight_decay, 0, 1,
                             "weight decay (scaled by batch·accumulate/nbs)", optim));
    schema.add(number_option("warmup_epochs", d.warmup_epochs, 0, 1000,
                             "warmup length in epochs (at least 100 iterations)", optim));
    schema.add(number_option("warmup_momentum", d.warmup_momentum, 0, 1,
                             "SGD momentum at the start of warmup", optim));
    schema.add(number_option("warmup_bias_lr", d.warmup_bias_lr, 0, 10,
                             "bias learning rate at the start of warmup", optim));
    schema.add(boolean_option("cos_lr", d.cos_lr, "cosine learning-rate schedule instead of linear",
                              optim));
    schema.add(number_option("grad_clip", d.grad_clip, 0, 1e6,
                             "gradient clipping max norm (0: off)", optim));
    schema.add(boolean_option(
        "ema", d.ema, "keep an exponential moving average of the weights (validated and saved)",
        optim));
    schema.add(boolean_option(
        "amp", d.amp,
        "mixed precision (autocast): on CUDA always, fp16 with dynamic loss scaling or bf16; on "
        "the CPU only with amp_dtype=bf16",
        train));
    OptionSpec amp_dtype = text_option(
        "amp_dtype", "fp16",
        "precision of amp: fp16, or bf16 (no loss scaling; GPUs from Ampere on, and CPUs with "
        "AMX or AVX-512 BF16, where it is about twice as fast as fp32)",
        train, OptionType::Choice);
    amp_dtype.choices = {"fp16", "bf16"};
    schema.add(amp_dtype);
    schema.add(boolean_option("deterministic", false,
                              "bit-identical GPU runs (deterministic kernels, no cuDNN autotuning; "
                              "slower)",
                              train));
    schema.add(integer_option("seed", 0, 0, 4294967295.0,
                              "random seed (data order, augmentation, initialization)", train));
    schema.add(text_option(
        "device", "",
        "cpu, a GPU index such as 0, a list such as 0,1,2,3 (one data-parallel rank per GPU), or "
        "empty for the first GPU (else CPU)",
        train));
    schema.add(integer_option("ranks", 1, 1, 64,
                              "data-parallel worker processes with device=cpu (a GPU list "
                              "gives one per GPU); batch stays the global batch, split evenly",
                              train));
    schema.add(integer_option("dist_timeout", 1800, 10, 86400,
                              "seconds a rank waits for the others (rendezvous, every "
                              "collective, rank 0's validation) before the run fails",
                              train));
    schema.add(option_spec("dist_backend", OptionType::Choice, "auto",
                           "what carries GPU tensors between ranks: auto (NCCL on Linux, Gloo "
                           "on Windows, where NCCL does not exist), nccl or gloo",
                           train, std::nullopt, std::nullopt, {"auto", "nccl", "gloo"}));
    schema.add(integer_option("workers", 0, 0, 1024,
                              "CPU threads for compute and data (0: all cores)", train));
    schema.add(boolean_option("val", true, "validate after every epoch", train));
    schema.add(text_option(
        "weights", "", "start from these weights (a .safetensors file, e.g. another run's best)",
        train, OptionType::Path));
    schema.add(integer_option("checkpoint_steps", d.checkpoint_steps, 0, 1e9,
                              "write a resumable checkpoint every N steps (0: only at epoch ends)",
                              ckpt));
    schema.add(integer_option("keep_checkpoints", 3, 1, 1000,
                              "how many step checkpoints to keep (plus best)", ckpt));
    schema.add(integer_option("save_period", -1, -1, 100000,
                              "also save weights every N epochs (-1: off)", ckpt));
    schema.add(integer_option("log_steps", 10, 1, 1000000,
                              "metric and progress events every N steps", run));
    schema.add(
        text_option("project", "", "folder for runs (default runs/<task>)", run, OptionType::Path));
    schema.add(
        text_option("name", "", "run name (default train; train2, train3, ... when taken)", run));
    schema.add(boolean_option("exist_ok", false,
                              "reuse an existing run folder instead of a new name", run));
}

bool is_location_option(const std::string& name) {
    return name == "project" || name == "name" || name == "exist_ok" || name == "log_steps" ||
           name == "workers" || name == "device" || name == "ranks" || name == "dist_timeout" ||
           name == "dist_backend";
}

TrainOptions TrainOptions::from_config(const Json& c) {
    TrainOptions o;
    auto num = [&](const char* k, double& v) {
        if (c.contains(k) && c[k].is_number()) v = c[k].get<double>();
    };
    auto i32 = [&](const char* k, int& v) {
        if (c.contains(k) && c[k].is_number()) v = static_cast<int>(c[k].get<long long>());
    };
    auto str = [&](const char* k, std::string& v) {
        if (c.contains(k) && c[k].is_string()) v = c[k].get<std::string>();
    };
    auto flag = [&](const char* k, bool& v) {
        if (c.contains(k) && c[k].is_boolean()) v = c[k].get<bool>();
    };
    i32("epochs", o.epochs);
    i32("batch", o.batch);
    num("lr0", o.lr0);
    num("lrf", o.lrf);
    num("momentum", o.momentum);
    num("weight_decay", o.weight_decay);
    num("warmup_epochs", o.warmup_epochs);
    num("warmup_momentum", o.warmup_momentum);
    num("warmup_bias_lr", o.warmup_bias_lr);
    i32("nbs", o.nbs);
    i32("patience", o.patience);
    str("optimizer", o.optimizer);
    flag("cos_lr", o.cos_lr);
    num("grad_clip", o.grad_clip);
    flag("amp", o.amp);
    str("amp_dtype", o.amp_dtype);
    flag("deterministic", o.deterministic);
    flag("ema", o.ema);
    flag("val", o.val);
    if (c.contains("seed") && c["seed"].is_number()) o.seed = c["seed"].get<std::int64_t>();
    str("device", o.device);
    i32("workers", o.workers);
    i32("ranks", o.ranks);
    i32("dist_timeout", o.dist_timeout_s);
    str("dist_backend", o.dist_backend);
    i32("save_period", o.save_period);
    i32("checkpoint_steps", o.checkpoint_steps);
    i32("keep_checkpoints", o.keep_checkpoints);
    i32("log_steps", o.log_steps);
    str("weights", o.weights);
    str("project", o.project);
    str("name", o.name);
    flag("exist_ok", o.exist_ok);
    return o;
}

}  // namespace crucible::engine
