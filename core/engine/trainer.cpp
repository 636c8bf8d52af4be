#include "core/engine/trainer.h"

#include <cmath>
#include <cstdio>
#include <thread>

#include "core/base/allocator.h"
#include "core/base/error.h"
#include "core/base/event_inbox.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/base/process_info.h"
#include "core/base/sha256.h"
#include "core/engine/algorithms.h"
#include "core/engine/autocast.h"
#include "core/engine/device_memory.h"
#include "core/engine/fault.h"
#include "core/engine/grad_clip.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/out_of_memory.h"
#include "core/engine/step_profile.h"
#include "core/engine/threads.h"
#include "core/engine/trainer_impl.h"
#include "core/engine/weights_file.h"

namespace crucible::engine {

namespace {

// A loss that is NaN or infinite ends the run (alarm + failed).
struct NonFiniteLoss : Error {
    using Error::Error;
};

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const long long s = static_cast<long long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s / 60) % 60);
    else
        std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
    return buf;
}

std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

// The metric and results.csv column of a parameter group's learning rate.
std::string lr_metric(const std::string& group) {
    return "lr/" + group;
}

}  // namespace

std::string config_hash(const Json& config) {
    Json copy = config;
    if (copy.is_object())
        for (auto it = copy.begin(); it != copy.end();)
            it = is_location_option(it.key()) ? copy.erase(it) : std::next(it);
    return sha256_hex(copy.dump());
}

Trainer::Impl::Impl(Task& task_, const TaskInfo& info_, Json config_, JobFolder paths_,
                    EventLogWriter* events_, RankAddress rank_)
    : task(task_),
      info(info_),
      config(std::move(config_)),
      opt(TrainOptions::from_config(config)),
      paths(std::move(paths_)),
      events(events_),
      config_sha(config_hash(config)),
      rank(std::move(rank_)),
      store(paths.checkpoints(), opt.keep_checkpoints),
      // Runs that inject a kill at a named point write synchronously, so every checkpoint
      // before that point is on disk when the process dies, as the resume tests expect.
      writer(store, fault_plan().kills()),
      control(paths.dir, rank.reads_job_folder) {}

Trainer::Trainer(Task& task, const TaskInfo& info, Json config, JobFolder paths,
                 EventLogWriter* events, RankAddress rank)
    : impl_(std::make_unique<Impl>(task, info, std::move(config), std::move(paths), events,
                                   std::move(rank))) {}

Trainer::~Trainer() = default;

void Trainer::Impl::emit(Event event) {
    if (events) events->append(std::move(event));
}

void Trainer::Impl::drain_inbox() {
    if (!events) return;
    // Events the agent posted while this worker owns events.jsonl (GPU alarms ...).
    try {
        drain_job_inbox(paths.dir, *events);
    } catch (const std::exception& e) {
        log_warn(std::string("job inbox: ") + e.what());  // a full disk: the files wait for later
    }
}

void Trainer::Impl::log(const std::string& level, const std::string& message) {
    const LogLevel known = parse_log_level(level).value_or(LogLevel::Info);
    log_at(known, message);
    log_tail.push_back(message);
    while (log_tail.size() > 20)
        log_tail.pop_front();
    emit(make_log(log_level_name(known), message));
}

double Trainer::Impl::elapsed_now() const {
    return s.elapsed_s +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

std::map<std::string, std::string> Trainer::Impl::provenance() const {
    return {{"crucible_version", CRUCIBLE_VERSION},
            {"crucible_task", info.id},
            {"crucible_config", config.dump()},
            {"crucible_config_sha256", config_sha},
            {"crucible_dataset_sha256", task.dataset_hash()},
            {"crucible_seed", std::to_string(opt.seed)},
            {"crucible_device", device.describe()}};
}

void Trainer::Impl::save_weights(const std::string& name) {
    if (!main_rank()) return;
    PhaseTimer timer("weights");
    auto meta = provenance();
    const Json extra = task.weights_metadata();
    if (extra.is_object())
        for (const auto& [k, v] : extra.items())
            meta[k] = v.is_string() ? v.get<std::string>() : v.dump();
    meta["crucible_epoch"] = std::to_string(s.epoch);
    save_module_safetensors(eval_model(), paths.weights() / (name + ".safetensors"), meta,
                            saved_state());
}

void Trainer::Impl::connect_ranks() {
    collective =
        Collective::connect(rank, std::chrono::seconds(opt.dist_timeout_s), opt.dist_backend);
    if (main_rank() && device.device.is_cuda())
        log("info", std::to_string(collective->world_size()) + " ranks; GPU tensors travel over " +
                        collective->gpu_backend());
}

ModuleState Trainer::Impl::saved_state() const {
    return task.rebuilds_frozen_weights() ? ModuleState::Trainable : ModuleState::All;
}

void Trainer::Impl::share_initial_weights() {
    std::vector<torch::Tensor> state;
    for (const auto& [name, tensor] : module_state(*model, saved_state()))
        state.push_back(tensor);
    collective->broadcast(state);
}

StopRequest Trainer::Impl::agreed_stop_request() {
    StopRequest mine = control.poll();
    if (!collective) return mine;
    // A rank whose launcher died (killed with the agent's job, a closed console) would train on
    // with nobody to collect it: it asks every rank to checkpoint and stop. Checked once a
    // second (a /proc read, an OpenProcess).
    const auto now = std::chrono::steady_clock::now();
    if (rank.launcher_pid > 0 && !launcher_lost &&
        now - launcher_checked >= std::chrono::seconds(1)) {
        launcher_checked = now;
        launcher_lost = !is_same_process(rank.launcher_pid, rank.launcher_token);
    }
    // The enum's order ranks the requests: a checkpoint (SIGTERM on any rank) outranks a cancel,
    // which outranks a pause; a lost launcher, one above them all, is a checkpoint that every
    // rank (rank 0 in the run's log) names.
    const std::int64_t lost = static_cast<std::int64_t>(StopRequest::Checkpoint) + 1;
    const std::int64_t agreed =
        collective->max(launcher_lost ? lost : static_cast<std::int64_t>(mine));
    if (agreed != lost) return static_cast<StopRequest>(agreed);
    log("warning", "the rank launcher (pid " + std::to_string(rank.launcher_pid) +
                       ") is gone: checkpointing and stopping every rank");
    return StopRequest::Checkpoint;
}

void Trainer::Impl::setup(bool resume) {
    started = std::chrono::steady_clock::now();
    const bool distributed = rank.world_size > 1;
    // Ranks on one machine share its cores: each takes its part unless workers= says otherwise.
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads = configure_cpu_threads(
        opt.workers == 0 && distributed ? std::max(1, hardware / rank.world_size) : opt.workers);
    keep_freed_memory_for_reuse();
    configure_algorithms(opt.deterministic);  // before any CUDA work
    device = choose_device(distributed ? rank.device : opt.device);
    if (distributed) connect_ranks();
    amp = training_autocast(opt.amp, opt.amp_dtype, device.device);
    // bf16 has fp32's exponent range: its gradients do not underflow, nothing to scale.
    scaler = DynamicLossScaler(amp.enabled && amp.dtype == torch::kFloat16);
    torch::manual_seed(static_cast<std::uint64_t>(opt.seed));
    if (device.device.is_cuda()) torch::cuda::manual_seed_all(static_cast<std::uint64_t>(opt.seed));

    TaskContext context;
    context.config = config;
    context.device = device.device;
    context.run_dir = paths.dir;
    context.artifacts_dir = paths.artifacts();
    context.seed = opt.seed;
    context.workers = threads;
    context.rank = rank.rank;
    context.world_size = rank.world_size;
    context.collective = collective.get();
    context.log = [this](const std::string& level, const std::string& message) {
        log(level, message);
    };
    context.emit = [this](Event event) {
        if (!event.fields.contains("step")) event.fields["step"] = s.step;
        emit(std::move(event));
    };
    task.setup(context);

    data = task.train_data();
    nb = data->batches_per_epoch();
    if (distributed) {
        // Every rank must step with every global batch: one whose slice would be empty cannot.
        if (opt.batch < rank.world_size)
            throw InputError("batch", std::to_string(opt.batch) + " is the global batch: " +
                                          std::to_string(rank.world_size) +
                                          " ranks need at least one item each");
        const std::int64_t last = data->items_per_epoch() - (nb - 1) * opt.batch;
        if (nb > 1 && last > 0 && last < rank.world_size) {
            nb -= 1;
            log("warning", "the last batch of each epoch (" + std::to_string(last) +
                               " item(s)) is left out: fewer than the " +
                               std::to_string(rank.world_size) + " ranks");
        }
    }
    if (nb <= 0) throw InputError("data", "the training set yields no batches");

    model = task.build_model();
    model->to(device.device);
    if (!opt.weights.empty()) {
        const auto report = load_module_safetensors(*model, path_from_utf8(opt.weights));
        log("info",
            "weights: loaded " + std::to_string(report.loaded) + " tensors from " + opt.weights +
                (report.mismatched.empty() ? ""
                                           : ", " + std::to_string(report.mismatched.size()) +
                                                 " skipped for another shape") +
                (report.missing.empty()
                     ? ""
                     : ", " + std::to_string(report.missing.size()) + " not in the file"));
    }
    if (distributed) share_initial_weights();  // before the EMA copy, which starts from them
    if (opt.ema) {
        auto copy = task.build_model();
        copy->to(device.device);
        ema = std::make_unique<ModelEma>(copy, *model);
    }

    groups = task.parameter_groups(*model);
    check_param_groups(groups);
    group_names = engine::group_names(groups);
    params = all_parameters(groups);
    choice =
        choose_optimizer(opt.optimizer, data->items_per_epoch(), opt.batch, opt.nbs, opt.epochs,
                         task.num_classes(), opt.lr0, opt.momentum, opt.warmup_bias_lr);
    const int accumulate = accumulate_steps(opt.nbs, opt.batch);
    weight_decay = scaled_weight_decay(opt.weight_decay, opt.batch, accumulate, opt.nbs);
    optimizer = make_optimizer(choice, groups, weight_decay);
    if (collective) grad_sync = collective->sync_gradients(params, 25 << 20);

    schedule.epochs = opt.epochs;
    schedule.batch = opt.batch;
    schedule.nbs = opt.nbs;
    schedule.lrf = opt.lrf;
    schedule.cos_lr = opt.cos_lr;
    schedule.momentum = choice.momentum;
    schedule.warmup_momentum = opt.warmup_momentum;
    schedule.warmup_bias_lr = choice.warmup_bias_lr;
    schedule.warmup_iters = warmup_iterations(opt.warmup_epochs, nb);
    schedule.groups.clear();
    for (const auto& g : groups)
        schedule.groups.push_back({choice.lr * g.lr_factor, g.warmup});
    schedule.has_momentum = choice.name == "SGD";

    loss_names = task.loss_names();
    eval_columns = task.eval_columns();
    std::vector<std::string> columns = {"epoch", "time"};
    for (const auto& n : loss_names)
        columns.push_back("train/" + n);
    columns.insert(columns.end(), eval_columns.begin(), eval_columns.end());
    for (const auto& name : group_names)
        columns.push_back(lr_metric(name));
    results = ResultsTable(columns);
    s.loss_sum.assign(loss_names.size(), 0.0);
    s.lr.assign(groups.size(), 0.0);

    log("info", std::string(info.id) + " on " + device.describe() +
                    (amp.enabled ? std::string(" (AMP ") + amp.name() + ")" : std::string()) +
                    ", " + std::to_string(threads) + " CPU threads; optimizer " + choice.name +
                    "(lr=" + log_number(choice.lr) + ", momentum=" + log_number(choice.momentum) +
                    ") with " + describe_groups() + "; accumulate " + std::to_string(accumulate) +
                    ", " + std::to_string(nb) + " batches per epoch" +
                    (distributed ? "; rank " + std::to_string(rank.rank) + " of " +
                                       std::to_string(rank.world_size) + " (Gloo)"
                                 : std::string()));
    if (amp.enabled && amp.device == c10::DeviceType::CPU && !cpu_has_native_bf16())
        log("warning",
            "amp_dtype=bf16 on a CPU without bf16 instructions (AMX or AVX-512 BF16): LibTorch "
            "emulates bf16 there, slower than fp32; amp=false trains in fp32");
    if (main_rank()) store.remove_stale_temp_files();
    if (resume) {
        if (!resume_from_checkpoint()) {
            log("warning", "resume: no valid checkpoint in " + path_to_utf8(paths.checkpoints()) +
                               "; starting from the beginning");
            emit(make_rollback(0));
        }
    }
    write_results();
}

// results.csv is for people: a spreadsheet may hold it open while the run goes on, and on
// Windows Excel locks what it opens. A failed write loses nothing (the rows stay here and in the
// events, and the next epoch's write carries them all), so it must not end the run.
void Trainer::Impl::write_results() {
    if (!main_rank()) return;
    try {
        results.write(paths.results_csv());
    } catch (const std::exception& e) {
        log("warning", std::string("results.csv could not be written (") + e.what() +
                           "); if a program holds it open, close it: the next epoch writes "
                           "every row again");
    }
}

std::string Trainer::Impl::describe_groups() const {
    // e.g. "pg0 (64 params, decay 0, bias warm-up), pg1 (...)"
    std::string out;
    for (const auto& g : groups) {
        if (!out.empty()) out += ", ";
        out += g.name + " (" + std::to_string(g.params.size()) + " params, decay " +
               log_number(g.decay == WeightDecay::Scaled ? weight_decay : 0.0);
        if (g.lr_factor != 1.0) out += ", lr x" + log_number(g.lr_factor);
        if (g.warmup == Warmup::Bias) out += ", bias warm-up";
        out += ")";
    }
    return out;
}

void Trainer::Impl::apply_schedule(std::int64_t ni) {
    const ScheduleValues v = schedule_at(schedule, ni, s.epoch);
    for (std::size_t j = 0; j < groups.size(); ++j) {
        set_group_lr(*optimizer, j, v.lr[j]);
        if (schedule.has_momentum) set_group_momentum(*optimizer, j, v.momentum);
    }
    s.lr = v.lr;
    s.momentum = v.momentum;
}

void Trainer::Impl::optimizer_step() {
    bool finite = true;
    {
        PhaseTimer timer("optimizer");
        finite = scaler.unscale(params);
        if (finite && opt.grad_clip > 0) clip_grad_norm(params, opt.grad_clip);
        if (finite) optimizer->step();
        scaler.update(!finite);
        optimizer->zero_grad();
    }
    if (ema) {
        PhaseTimer timer("ema");
        ema->update(*model);
    }
}

void Trainer::Impl::train_step(const Batch& batch, std::int64_t i) {
    const std::int64_t ni = i + nb * s.epoch;
    apply_schedule(ni);
    const int accumulate = schedule_at(schedule, ni, s.epoch).accumulate;
    LossOutput out;
    {
        AutocastGuard autocast(amp);
        out = task.compute_loss(*model, batch);
    }
    const bool steps_now = ni - s.last_opt_step >= accumulate;
    torch::Tensor total = out.total;
    torch::Tensor items = out.items;
    if (collective) {
        // The reducer averages the ranks' gradients. A rank whose slice of the global batch is
        // larger or smaller than the others' (a batch not divisible by the world size, the
        // short last batch, fewer labelled tokens) weighs in by its share, so the ranks' mean
        // is one process's loss on the whole global batch; the loss items, averaged over the
        // ranks when they are read, get the same weights.
        double local = static_cast<double>(batch.size);
        double global = static_cast<double>(batch.global_size);
        if (out.count > 0) {  // the task's own count: the global one is summed over the ranks
            std::vector<double> counts = {out.count};
            collective->sum(counts);
            local = out.count;
            global = std::max(counts[0], out.count_floor);
        }
        const double share =
            global > 0 ? local * static_cast<double>(collective->world_size()) / global : 0.0;
        if (share != 1.0) {
            total = total * share;
            items = items * share;
        }
        // Only the micro-batch before an optimizer step averages gradients across ranks; the
        // others accumulate locally (DDP's no_sync), as one process accumulates them.
        if (steps_now) grad_sync->prepare({total});
    }
    // Summed on the device; a non-finite loss is found when the sums are read (sync_losses).
    loss_sums.add(total, items, s.step);
    {
        PhaseTimer timer("backward");
        scaler.scale_loss(total).backward();
    }
    if (steps_now) {
        optimizer_step();
        s.last_opt_step = ni;
    }
    s.index = i + 1;
    s.step += 1;
    StepProfile::current().count_step();
}

std::int64_t Trainer::Impl::global_batch_items(std::int64_t i) const {
    return std::min<std::int64_t>(
        opt.batch, std::max<std::int64_t>(data->items_per_epoch() - i * opt.batch, 1));
}

void Trainer::Impl::sync_losses() {
    auto bad = loss_sums.read(s.loss_sum);
    if (collective) {
        // The mean over the ranks (each summed its own shard's losses): one set of curves. A
        // non-finite loss on any rank stops every rank at the same read.
        std::vector<double> values = s.loss_sum;
        values.push_back(bad ? 1.0 : 0.0);
        values.push_back(bad ? static_cast<double>(bad->step) : 0.0);
        values.push_back(bad ? bad->value : 0.0);
        collective->sum(values);
        const double world = static_cast<double>(collective->world_size());
        for (std::size_t k = 0; k < s.loss_sum.size(); ++k)
            s.loss_sum[k] = values[k] / world;
        const double bad_ranks = values[s.loss_sum.size()];
        if (!bad && bad_ranks > 0) bad = DeviceLossSums::NonFinite{s.step, std::nan("")};
    }
    if (!bad) return;
    throw NonFiniteLoss("non-finite loss (" + std::to_string(bad->value) + ") at epoch " +
                        std::to_string(bad->step / std::max<std::int64_t>(nb, 1) + 1) + ", step " +
                        std::to_string(bad->step + 1));
}

void Trainer::Impl::report_step(std::int64_t batch_items) {
    window_items += batch_items;
    window_steps += 1;
    const std::int64_t total_steps = nb * opt.epochs;
    if (s.step % opt.log_steps != 0 && s.index != nb) return;
    sync_losses();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start).count();
    const double items_per_s = secs > 0 ? static_cast<double>(window_items) / secs : 0.0;
    if (window_steps > 0 && secs > 0) seconds_per_step = secs / static_cast<double>(window_steps);
    eta_estimate.observe(s.step, std::chrono::steady_clock::now());
    const double eta = std::max(0.0, eta_estimate.seconds_left(total_steps, seconds_per_step));
    Json values = Json::object();
    std::string line = "epoch " + std::to_string(s.epoch + 1) + "/" + std::to_string(opt.epochs) +
                       "  step " + std::to_string(s.index) + "/" + std::to_string(nb);
    for (std::size_t k = 0; k < loss_names.size(); ++k) {
        const double mean = s.loss_sum[k] / static_cast<double>(std::max<std::int64_t>(s.index, 1));
        values["train/" + loss_names[k]] = mean;
        char buf[64];
        std::snprintf(buf, sizeof buf, "  %s %.4g", loss_names[k].c_str(), mean);
        line += buf;
    }
    for (std::size_t j = 0; j < groups.size(); ++j)
        values[lr_metric(group_names[j])] = s.lr[j];
    if (auto memory = device_memory(device.device)) {
        memory->seconds_per_step = seconds_per_step;
        values[metric_key::kGpuMemAllocatedGib] =
            static_cast<double>(memory->allocated) / (1u << 30);
        values[metric_key::kGpuMemReservedGib] = static_cast<double>(memory->reserved) / (1u << 30);
        if (auto alarm = memory_watch.observe(*memory)) {
            emit(make_alarm(alarm->alarm, alarm->message));
            log("warning", alarm->message);
        }
    }
    emit(make_metric(s.epoch + 1, s.step, values));
    last_reported_step = s.step;
    emit(make_progress(s.step, total_steps, s.epoch + 1, opt.epochs, items_per_s, eta));
    char tail[96];
    std::snprintf(tail, sizeof tail, "  %.1f items/s  ETA %s", items_per_s,
                  format_duration(eta).c_str());
    log_info(line + tail);
    window_items = 0;
    window_steps = 0;
    window_start = std::chrono::steady_clock::now();
}

TrainOutcome Trainer::Impl::end_epoch(bool& stop) {
    const int epoch = s.epoch;
    const bool final_epoch = epoch + 1 >= opt.epochs;
    fault_point("during_validation", epoch, 0);
    EvalResult eval;
    const bool validated = opt.val || final_epoch;
    sync_losses();
    // Over the batches this epoch had (nb, unless the data ran out before).
    std::vector<double> loss_means;
    for (double sum : s.loss_sum)
        loss_means.push_back(sum / static_cast<double>(std::max<std::int64_t>(s.index, 1)));
    double fitness = 0;
    if (validated && (main_rank() || task.validates_in_shards())) {
        torch::NoGradGuard no_grad;
        eval_model().eval();
        PhaseTimer timer("val");
        eval = task.validate(eval_model());
        fitness = eval.fitness;
    } else if (!validated) {
        for (double m : loss_means)
            fitness -= m;
    }
    if (collective && validated) {
        // Rank 0 validated (alone, or gathering the others' shares); every rank takes its
        // fitness (waiting here up to dist_timeout), so that best and early stopping are
        // decided alike on every rank.
        std::vector<double> shared = {main_rank() ? fitness : 0.0};
        collective->sum(shared);
        fitness = shared[0];
    }
    const bool improved = !s.has_best || fitness >= s.best_fitness;
    if (improved) {
        s.has_best = true;
        s.best_fitness = fitness;
        s.best_epoch = epoch;
    }
    stop = opt.patience > 0 && epoch - s.best_epoch >= opt.patience;

    std::vector<double> row = {static_cast<double>(epoch + 1), elapsed_now()};
    row.insert(row.end(), loss_means.begin(), loss_means.end());
    Json eval_values = Json::object();
    for (const auto& column : eval_columns) {
        double value = 0;
        for (const auto& [name, v] : eval.values)
            if (name == column) value = v;
        row.push_back(value);
        eval_values[column] = value;
    }
    row.insert(row.end(), s.lr.begin(), s.lr.end());
    results.add_row(row);
    write_results();

    Json train_values = Json::object();
    for (std::size_t k = 0; k < loss_names.size(); ++k)
        train_values["train/" + loss_names[k]] = loss_means[k];
    for (std::size_t j = 0; j < groups.size(); ++j)
        train_values[lr_metric(group_names[j])] = s.lr[j];
    if (last_reported_step != s.step) emit(make_metric(epoch + 1, s.step, train_values));
    if (validated) {
        eval_values["fitness"] = fitness;
        emit(make_eval(epoch + 1, s.step, eval_values, eval.per_class));
    }
    std::string summary = "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(opt.epochs) +
                          " done: fitness " + std::to_string(fitness) + (improved ? " (best)" : "");
    log("info", summary);

    s.epoch = epoch + 1;
    s.index = 0;
    std::fill(s.loss_sum.begin(), s.loss_sum.end(), 0.0);
    loss_sums.reset(s.loss_sum, device.device);
    save_weights("last");
    if (improved && main_rank()) {
        // The same weights as last.safetensors: a second name, not a second write.
        PhaseTimer timer("weights");
        link_or_copy_atomically(paths.weights() / "last.safetensors",
                                paths.weights() / "best.safetensors");
    }
    if (opt.save_period > 0 && (epoch + 1) % opt.save_period == 0)
        save_weights("epoch" + std::to_string(epoch + 1));
    checkpoint(improved);
    // Phases the trainer times (data, backward, optimizer, ema) plus those the task times inside
    // compute_loss (forward, loss); one line per epoch, read by the benchmarks.
    log("info", "time per step (epoch " + std::to_string(epoch + 1) +
                    "): " + StepProfile::current().this_epoch().summary());
    StepProfile::current().finish_epoch();
    return {};
}

TrainOutcome Trainer::Impl::finish(JobState state, const std::string& reason) {
    report_checkpoints(writer.finish_all());  // every checkpoint event before the final status
    drain_inbox();
    Event status = make_status(job_state_name(state), reason);
    status.fields["epoch"] = s.epoch;
    status.fields["step"] = s.step;
    if (s.has_best) status.fields["best_fitness"] = s.best_fitness;
    if (state == JobState::Failed)
        status.fields["log_tail"] =
            Json(std::vector<std::string>(log_tail.begin(), log_tail.end()));
    emit(status);
    TrainOutcome outcome;
    outcome.state = state;
    outcome.reason = reason;
    outcome.exit_code = worker_exit_code(state);
    outcome.epochs_done = s.epoch;
    outcome.best_fitness = s.best_fitness;
    return outcome;
}

TrainOutcome Trainer::Impl::loop() {
    emit(make_status(job_state_name(JobState::Running)));
    loss_sums.reset(s.loss_sum, device.device);
    StepProfile::current().reset();
    window_start = std::chrono::steady_clock::now();
    while (s.epoch < opt.epochs) {
        task.on_epoch_start(s.epoch, opt.epochs);
        model->train();
        data->start_epoch(s.epoch, s.index);
        for (std::int64_t i = s.index; i < nb; ++i) {
            std::optional<Batch> batch;
            {
                PhaseTimer timer("data");
                batch = data->next();
            }
            if (!batch) break;
            batch->global_size = collective ? global_batch_items(i) : batch->size;
            train_step(*batch, i);
            // Speed is the run's: all ranks' items (rank 0 reports it).
            report_step(batch->global_size);
            if (opt.checkpoint_steps > 0 && s.step % opt.checkpoint_steps == 0 && s.index != nb)
                checkpoint(false);
            report_checkpoints(writer.take_finished());
            if (s.index == std::max<std::int64_t>(nb / 2, 1)) fault_point("mid_epoch", s.epoch, 1);
            fault_point("after_step", s.step, 1);
            drain_inbox();
            const StopRequest request = agreed_stop_request();
            if (request == StopRequest::Cancel)
                return finish(JobState::Canceled, "canceled by request");
            if (request == StopRequest::Pause || request == StopRequest::Checkpoint) {
                report_checkpoints(writer.finish_all());
                if (last_checkpoint_step != s.step) checkpoint(false);
                report_checkpoints(writer.finish_all());
                const bool saved = last_checkpoint_step == s.step;
                const std::string note = saved ? "" : " (the checkpoint could not be written)";
                if (request == StopRequest::Pause)
                    return finish(JobState::Paused, "paused by request" + note);
                return finish(JobState::Interrupted,
                              "stopped on request (SIGTERM or checkpoint request)" + note);
            }
        }
        s.index = nb;
        bool stop = false;
        end_epoch(stop);
        if (stop) {
            return finish(JobState::Succeeded,
                          "early stopping: no improvement in " + std::to_string(opt.patience) +
                              " epochs (best epoch " + std::to_string(s.best_epoch + 1) + ")");
        }
    }
    if (main_rank()) {
        auto best = task.build_model();
        best->to(device.device);
        const auto best_file = paths.weights() / "best.safetensors";
        std::error_code ec;
        if (std::filesystem::exists(best_file, ec)) load_module_safetensors(*best, best_file);
        best->eval();
        task.save_artifacts(*best, paths.artifacts());
    }
    return finish(JobState::Succeeded, "finished");
}

TrainOutcome Trainer::run(bool resume) {
    Impl& m = *impl_;
    const auto out_of_memory = [&m](const std::string& what) {
        const std::string reason = "out of memory at batch size " + std::to_string(m.opt.batch) +
                                   " on " + m.device.describe() + ": " + what;
        m.emit(make_alarm("out_of_memory", reason));
        return m.finish(JobState::Failed, reason);
    };
    try {
        m.setup(resume);
        return m.loop();
    } catch (const NonFiniteLoss& e) {
        m.emit(make_alarm("non_finite_loss", e.what()));
        return m.finish(JobState::Failed, e.what());
    } catch (const c10::Error& e) {
        if (is_out_of_memory(e)) return out_of_memory(first_line(e.what()));
        const std::string what = first_line(e.what());
        m.log("error", "LibTorch error: " + what);
        return m.finish(JobState::Failed, "LibTorch error: " + what);
    } catch (const std::bad_alloc& e) {
        return out_of_memory(e.what());
    } catch (const std::exception& e) {
        m.log("error", e.what());
        return m.finish(JobState::Failed, e.what());
    }
}

}  // namespace crucible::engine
