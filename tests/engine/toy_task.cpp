#include "tests/engine/toy_task.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <numeric>
#include <random>
#include <thread>

#include "core/base/file_io.h"
#include "core/base/options_schema.h"
#include "core/base/rank_plan.h"
#include "core/engine/autocast.h"
#include "core/engine/task.h"
#include "core/engine/task_commands.h"
#include "core/engine/train_options.h"

namespace crucible::engine::toy {
namespace {

std::atomic<long long> g_cpu_bf16_steps{0};

struct MlpImpl : torch::nn::Module {
    MlpImpl(int dim, double dropout, bool batchnorm)
        : use_bn(batchnorm),
          fc1(register_module("fc1", torch::nn::Linear(dim, 16))),
          bn(register_module("bn", torch::nn::BatchNorm1d(16))),
          drop(register_module("drop", torch::nn::Dropout(dropout))),
          fc2(register_module("fc2", torch::nn::Linear(16, 1))) {}
    torch::Tensor forward(torch::Tensor x) {
        torch::Tensor h = fc1(x);
        return fc2(drop(torch::relu(use_bn ? bn(h) : h)));
    }
    bool use_bn;
    torch::nn::Linear fc1;
    torch::nn::BatchNorm1d bn;
    torch::nn::Dropout drop;
    torch::nn::Linear fc2;
};
TORCH_MODULE(Mlp);

struct Data {
    torch::Tensor x, y;
};

Data make_data(int n, int dim, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> w(static_cast<std::size_t>(dim));
    for (auto& v : w)
        v = normal(rng);
    std::vector<float> xs(static_cast<std::size_t>(n * dim)), ys(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        float acc = 0;
        for (int j = 0; j < dim; ++j) {
            const float v = normal(rng);
            xs[static_cast<std::size_t>(i * dim + j)] = v;
            acc += v * w[static_cast<std::size_t>(j)];
        }
        ys[static_cast<std::size_t>(i)] = acc + 0.1f * normal(rng);
    }
    return {torch::from_blob(xs.data(), {n, dim}).clone(),
            torch::from_blob(ys.data(), {n, 1}).clone()};
}

class ToySource : public BatchSource {
  public:
    ToySource(Data data, int batch, std::int64_t seed, int rank, int world_size)
        : data_(std::move(data)),
          batch_(batch),
          seed_(seed),
          rank_(rank),
          world_size_(world_size) {}
    std::int64_t batches_per_epoch() const override {
        return (data_.x.size(0) + batch_ - 1) / batch_;
    }
    std::int64_t items_per_epoch() const override { return data_.x.size(0); }
    void start_epoch(int epoch, std::int64_t index) override {
        order_.resize(static_cast<std::size_t>(data_.x.size(0)));
        std::iota(order_.begin(), order_.end(), 0);
        std::mt19937_64 rng(static_cast<std::uint64_t>(seed_) * 1000003ull +
                            static_cast<std::uint64_t>(epoch));
        std::shuffle(order_.begin(), order_.end(), rng);
        next_ = index;
    }
    std::optional<Batch> next() override {
        if (next_ >= batches_per_epoch()) return std::nullopt;
        const std::int64_t global_begin = next_ * batch_;
        const std::int64_t global_end =
            std::min<std::int64_t>(global_begin + batch_, data_.x.size(0));
        // This rank's slice of the global batch (all of it for a single process).
        const auto [begin, end] = shard_range(global_begin, global_end, rank_, world_size_);
        std::vector<std::int64_t> idx(order_.begin() + begin, order_.begin() + end);
        const auto index = torch::tensor(idx);
        ++next_;
        Batch b;
        b.size = end - begin;
        b.data = std::make_pair(data_.x.index_select(0, index), data_.y.index_select(0, index));
        return b;
    }

  private:
    Data data_;
    int batch_;
    std::int64_t seed_;
    int rank_, world_size_;
    std::vector<std::int64_t> order_;
    std::int64_t next_ = 0;
};

class ToyTask : public Task {
  public:
    OptionSchema schema() const override {
        OptionSchema s(kTaskId, "Toy regression (engine tests)");
        TrainDefaults d;
        d.epochs = 4;
        d.batch = 8;
        d.nbs = 16;
        d.warmup_epochs = 0;
        d.optimizer = "SGD";
        d.lr0 = 0.05;
        d.patience = 100;
        d.checkpoint_steps = 0;
        add_training_options(s, d);
        OptionSpec samples{"samples", OptionType::Integer, 64,    1, 1e6,
                           {},        "training samples",  "data"};
        OptionSpec dim{"dim", OptionType::Integer, 4, 1, 1024, {}, "input features", "data"};
        OptionSpec dropout{"dropout", OptionType::Number,    0.1,    0, 0.9,
                           {},        "dropout probability", "model"};
        OptionSpec fitness{"fitness", OptionType::Choice,     "loss",         {},
                           {},        {"loss", "decreasing"}, "fitness rule", "val"};
        OptionSpec nan_at{
            "nan_at_step", OptionType::Integer, -1, -1, 1e9, {}, "make the loss NaN at this step",
            "test"};
        OptionSpec oom_at{"oom_at_step",
                          OptionType::Integer,
                          -1,
                          -1,
                          1e9,
                          {},
                          "ask the allocator for an impossible tensor at this step",
                          "test"};
        OptionSpec batchnorm{"batchnorm",
                             OptionType::Boolean,
                             true,
                             {},
                             {},
                             {},
                             "BatchNorm1d after fc1 (per rank in a distributed run)",
                             "model"};
        OptionSpec groups{"param_groups",
                          OptionType::Choice,
                          "default",
                          {},
                          {},
                          {"default", "body_head"},
                          "default: pg0/pg1/pg2; body_head: body (fc1, bn) and head (fc2, half lr)",
                          "test"};
        s.add(samples).add(dim).add(dropout).add(fitness).add(nan_at).add(oom_at).add(groups).add(
            batchnorm);
        return s;
    }
    void setup(const TaskContext& c) override {
        ctx_ = c;
        const int n = c.config["samples"].get<int>();
        dim_ = c.config["dim"].get<int>();
        train_ = make_data(n, dim_, static_cast<std::uint64_t>(c.seed) + 1);
        // The same seed draws the same weights first, so the 32 rows after the training ones
        // follow the same rule: a held-out set.
        val_ = make_data(n + 32, dim_, static_cast<std::uint64_t>(c.seed) + 1);
        val_.x = val_.x.slice(0, n, n + 32);
        val_.y = val_.y.slice(0, n, n + 32);
        batch_ = c.config["batch"].get<int>();
        fitness_ = c.config["fitness"].get<std::string>();
        nan_at_ = c.config["nan_at_step"].get<long long>();
        oom_at_ = c.config["oom_at_step"].get<long long>();
        c.log("info", "toy task: " + std::to_string(n) + " samples");
    }
    std::unique_ptr<BatchSource> train_data() override {
        return std::make_unique<ToySource>(train_, batch_, ctx_.seed, ctx_.rank, ctx_.world_size);
    }
    std::shared_ptr<torch::nn::Module> build_model() override {
        return Mlp(dim_, ctx_.config["dropout"].get<double>(), ctx_.config["batchnorm"].get<bool>())
            .ptr();
    }
    std::vector<std::string> loss_names() const override { return {"mse_loss"}; }
    LossOutput compute_loss(torch::nn::Module& model, const Batch& batch) override {
        ++steps_;
        const AutocastMode autocast = current_autocast();
        if (autocast.enabled && autocast.device == c10::DeviceType::CPU &&
            autocast.dtype == torch::kBFloat16)
            ++g_cpu_bf16_steps;
        const auto& [x, y] =
            std::any_cast<const std::pair<torch::Tensor, torch::Tensor>&>(batch.data);
        auto& mlp = dynamic_cast<MlpImpl&>(model);
        torch::Tensor loss = torch::mse_loss(mlp.forward(x), y);
        if (nan_at_ >= 0 && steps_ == nan_at_)
            loss = loss * std::numeric_limits<float>::quiet_NaN();
        // 2^60 floats: the allocator itself fails and throws its own out-of-memory error.
        if (oom_at_ >= 0 && steps_ == oom_at_) loss = loss + torch::empty({1LL << 60}).sum();
        return {loss, loss.detach().reshape({1})};
    }
    std::vector<std::string> eval_columns() const override {
        return {"metrics/neg_mse", "val/mse_loss"};
    }
    EvalResult validate(torch::nn::Module& model) override {
        auto& mlp = dynamic_cast<MlpImpl&>(model);
        const double mse = torch::mse_loss(mlp.forward(val_.x), val_.y).item<double>();
        EvalResult r;
        r.values = {{"metrics/neg_mse", -mse}, {"val/mse_loss", mse}};
        r.per_class = Json::array({{{"class", "all"}, {"mse", mse}}});
        r.fitness = fitness_ == "decreasing" ? 1.0 / (++evals_) : -mse;
        return r;
    }
    ParamGroups parameter_groups(torch::nn::Module& model) override {
        if (ctx_.config["param_groups"].get<std::string>() == "default")
            return default_parameter_split(model);
        // Two groups of the task's own: the body decayed with a bias-style warm-up, the head
        // without decay at half the learning rate.
        ParamGroup body, head;
        body.name = "body";
        body.warmup = Warmup::Bias;
        head.name = "head";
        head.decay = WeightDecay::None;
        head.lr_factor = 0.5;
        for (const auto& p : model.named_parameters())
            (p.key().rfind("fc2.", 0) == 0 ? head : body).add(p.key(), p.value());
        return {body, head};
    }
    int num_classes() const override { return 1; }
    std::string dataset_hash() const override { return "toy-" + std::to_string(ctx_.seed); }

  private:
    TaskContext ctx_;
    Data train_, val_;
    int dim_ = 4, batch_ = 8;
    std::string fitness_;
    long long nan_at_ = -1, oom_at_ = -1, steps_ = 0;
    int evals_ = 0;
};

RegisterTask registration({kTaskId, "Toy regression", {"toy"}, "toy", [] {
                               return std::make_unique<ToyTask>();
                           }});

// A command that runs as a job (command_job.h): writes `<project or here>/started`, then waits
// `seconds` and writes `done` beside it.
OptionSchema wait_schema() {
    OptionSchema s("toy", "Wait");
    s.add(integer_option("seconds", 0, 0, 3600, "how long to wait", "general"));
    s.add(
        option_spec("project", OptionType::Path, "", "where to write (default: here)", "general"));
    return s;
}

int run_wait(const Json& options) {
    const std::string project = options["project"].get<std::string>();
    const std::filesystem::path out =
        project.empty() ? std::filesystem::current_path() : path_from_utf8(project);
    write_file_atomically(out / "started", "started\n");
    std::this_thread::sleep_for(std::chrono::seconds(options["seconds"].get<long long>()));
    write_file_atomically(out / "done", "done\n");
    return 0;
}

RegisterTaskCommand wait_command(
    {kTaskId, "wait", "wait (tests)", &wait_schema, &run_wait, {}, {}, {}, "project"});

}  // namespace

void ensure_registered() {
    (void)&registration;
    (void)&wait_command;
}

long long cpu_bf16_steps() {
    return g_cpu_bf16_steps.load();
}

}  // namespace crucible::engine::toy
