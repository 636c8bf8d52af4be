// Saving and restoring the whole training state (issue [4/10] "Checkpoints" and "Resume").

#include <optional>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/engine/optimizer_state.h"
#include "core/engine/step_profile.h"
#include "core/engine/tensor_state.h"
#include "core/engine/trainer_impl.h"

namespace crucible::engine {

namespace {

// Checkpoints before parameter groups had names (format 1 up to [B2 2/8]) kept the learning
// rates as an array of the three default groups and results.csv with their columns.
std::string legacy_group_name(std::size_t index) {
    return "pg" + std::to_string(index);
}

}  // namespace

Json Trainer::Impl::lr_by_group() const {
    Json out = Json::object();
    for (std::size_t j = 0; j < group_names.size(); ++j)
        out[group_names[j]] = s.lr[j];
    return out;
}

void Trainer::Impl::restore_lr(const Json& lr, const std::string& where) {
    // {"<group>": lr, ...}, or the older [pg0, pg1, pg2], whose pg1 stands for a group of
    // another name (as in restore_results). The values only label the metrics until the next
    // step sets them from the schedule; a group the checkpoint lacks reads 0.
    Json by_name = lr;
    double fallback = 0;
    if (lr.is_array()) {
        by_name = Json::object();
        for (std::size_t j = 0; j < lr.size(); ++j)
            by_name[legacy_group_name(j)] = lr[j];
        if (lr.size() > 1 && lr[1].is_number()) fallback = lr[1].get<double>();
    }
    if (!by_name.is_object()) throw InputError(where, "field 'lr' must be an object");
    for (std::size_t j = 0; j < group_names.size(); ++j) {
        const auto it = by_name.find(group_names[j]);
        s.lr[j] = it != by_name.end() && it->is_number() ? it->get<double>() : fallback;
    }
}

void Trainer::Impl::restore_results(const Json& columns, const Json& rows, bool legacy,
                                    const std::string& where) {
    if (columns == Json(results.columns())) {
        results.set_rows_json(rows);
        return;
    }
    if (!legacy)
        throw InputError(where, "checkpoint's results.csv columns differ from this task's");
    // A checkpoint of the three default groups for a task that now declares its own: the rows
    // keep every other column, and a group's lr/<name> column reads the old lr/pg1 (the group
    // that held every trainable parameter of the LoRA tasks, which had neither biases nor norms).
    std::vector<std::string> old_columns;
    if (columns.is_array())
        for (const auto& c : columns)
            old_columns.push_back(c.is_string() ? c.get<std::string>() : "");
    auto index_of = [&](const std::string& name) -> std::optional<std::size_t> {
        for (std::size_t i = 0; i < old_columns.size(); ++i)
            if (old_columns[i] == name) return i;
        return std::nullopt;
    };
    std::vector<std::string> rest_old, rest_new;
    for (const auto& c : old_columns)
        if (c.rfind("lr/", 0) != 0) rest_old.push_back(c);
    for (const auto& c : results.columns())
        if (c.rfind("lr/", 0) != 0) rest_new.push_back(c);
    const auto old_lr = index_of("lr/" + legacy_group_name(1));
    if (rest_old != rest_new || !old_lr || !rows.is_array())
        throw InputError(where, "checkpoint's results.csv columns differ from this task's");
    Json mapped = Json::array();
    for (const auto& row : rows) {
        const auto values = row.get<std::vector<double>>();
        if (values.size() != old_columns.size())
            throw InputError(where, "checkpoint's results.csv rows do not match its columns");
        std::vector<double> out;
        for (const auto& c : results.columns()) {
            const auto at = c.rfind("lr/", 0) == 0 ? old_lr : index_of(c);
            out.push_back(values[*at]);
        }
        mapped.push_back(out);
    }
    results.set_rows_json(mapped);
}

std::string Trainer::Impl::encode_state() {
    sync_losses();
    CheckpointData state;
    state.meta = {{"format", 1},
                  {"crucible_version", CRUCIBLE_VERSION},
                  {"task", info.id},
                  {"config", config},
                  {"config_sha256", config_sha},
                  {"world_size", rank.world_size},
                  {"epochs", opt.epochs},
                  {"epoch", s.epoch},
                  {"index", s.index},
                  {"step", s.step},
                  {"last_opt_step", s.last_opt_step},
                  {"loss_sum", s.loss_sum},
                  {"has_best", s.has_best},
                  {"best_fitness", s.best_fitness},
                  {"best_epoch", s.best_epoch},
                  {"elapsed_s", elapsed_now()},
                  {"lr", lr_by_group()},
                  {"param_groups", group_names},
                  {"momentum", s.momentum},
                  {"optimizer", choice.name},
                  {"ema_updates", ema ? ema->updates() : 0},
                  {"scaler", scaler.state()},
                  {"results_columns", results.columns()},
                  {"results_rows", results.rows_json()},
                  {"last_event_seq", events->next_seq() - 1},
                  {"device", device.describe()}};
    state.blobs["model"] = module_to_bytes(*model, saved_state());
    if (ema) state.blobs["ema"] = module_to_bytes(ema->module());  // its copies never train
    state.blobs["optimizer"] = optimizer_state_to_bytes(*optimizer, group_names);
    state.blobs["grads"] = grads_to_bytes(*model);
    state.blobs["rng"] = rng_to_bytes();
    return encode_checkpoint(state);
}

void Trainer::Impl::average_accumulated_gradients() {
    // Between optimizer steps each rank holds the gradients of its own slices. The checkpoint
    // keeps one set, so they are averaged first: every rank resumes with the mean, and the mean
    // of (mean + later slices) is the mean the uninterrupted run averages at its next step.
    // Right after an optimizer step nothing is pending (every rank's gradients are zero): the
    // usual case, since checkpoints at epoch ends and every checkpoint_steps mostly fall there.
    const std::int64_t last_done = nb * s.epoch + s.index - 1;
    if (last_done == s.last_opt_step) return;
    torch::NoGradGuard no_grad;
    // One all-reduce of every gradient side by side, not one per parameter.
    std::vector<torch::Tensor> flat;
    for (auto& p : params)
        flat.push_back(p.grad().defined() ? p.grad().reshape(-1)
                                          : torch::zeros({p.numel()}, p.options()));
    torch::Tensor all = torch::cat(flat);
    collective->sum(all);
    all.div_(static_cast<double>(collective->world_size()));
    std::int64_t at = 0;
    for (auto& p : params) {
        const torch::Tensor mean = all.narrow(0, at, p.numel()).view_as(p);
        at += p.numel();
        if (p.grad().defined())
            p.mutable_grad().copy_(mean);
        else
            p.mutable_grad() = mean.clone();
    }
}

void Trainer::Impl::checkpoint(bool best) {
    PhaseTimer timer("checkpoint");
    if (collective) average_accumulated_gradients();
    if (!main_rank()) {
        // Rank 0 writes; the others take part in the loss read it makes (a collective) and
        // count the step as checkpointed, as rank 0 does once its write is through.
        try {
            sync_losses();
        } catch (const std::exception&) {
            // Rank 0 reports it (as a checkpoint alarm); every rank saw the same read.
        }
        last_checkpoint_step = s.step;
        return;
    }
    std::string bytes;
    try {
        bytes = encode_state();
    } catch (const std::exception& e) {
        emit(make_alarm("checkpoint_failed",
                        std::string(e.what()) + "; the previous checkpoint is kept"));
        return;
    }
    // The bytes are those of this step; the disk write goes on behind the next steps.
    report_checkpoints(writer.submit(s.step, std::move(bytes), best));
}

void Trainer::Impl::report_checkpoints(const std::vector<CheckpointWriter::Outcome>& outcomes) {
    for (const auto& o : outcomes) {
        if (!o.error.empty()) {
            const bool full = o.error.find("No space") != std::string::npos ||
                              o.error.find("ENOSPC") != std::string::npos ||
                              o.error.find("disk full") != std::string::npos;
            emit(make_alarm(full ? "disk_full" : "checkpoint_failed",
                            o.error + "; the previous checkpoint is kept and training goes on"));
            log_warn(o.error);
            continue;
        }
        last_checkpoint_step = std::max(last_checkpoint_step, o.step);
        emit(make_checkpoint("last", o.step));
        if (!o.best) continue;
        if (o.best_error.empty())
            emit(make_checkpoint("best", o.step));
        else
            emit(make_alarm("checkpoint_failed", o.best_error + "; best.ckpt not updated"));
    }
}

void Trainer::Impl::restore_state(const CheckpointData& saved, const std::string& where) {
    const Json& m = saved.meta;
    auto need = [&](const char* name) -> const Json& { return require_field(m, name, where); };
    if (get_string(m, "task", where) != info.id)
        throw InputError(
            where, "checkpoint of task '" + get_string(m, "task", where) + "', not " + info.id);
    if (get_string(m, "optimizer", where) != choice.name)
        throw InputError(where, "checkpoint was trained with " + get_string(m, "optimizer", where) +
                                    ", the config now asks for " + choice.name);
    for (const char* blob : {"model", "optimizer", "grads", "rng"})
        if (!saved.blobs.count(blob))
            throw InputError(where, std::string("checkpoint lacks '") + blob + "'");

    module_from_bytes(*model, saved.blobs.at("model"), saved_state());
    if (ema) {
        if (saved.blobs.count("ema"))
            module_from_bytes(ema->module(), saved.blobs.at("ema"));
        else
            copy_module_state(*model, ema->module());
        ema->set_updates(m.value("ema_updates", 0LL));
    }
    optimizer_state_from_bytes(*optimizer, group_names, saved.blobs.at("optimizer"));
    grads_from_bytes(*model, saved.blobs.at("grads"));
    scaler.load_state(m.value("scaler", Json::object()));

    s.epoch = static_cast<int>(get_integer(m, "epoch", where));
    s.index = get_integer(m, "index", where);
    s.step = get_integer(m, "step", where);
    s.last_opt_step = get_integer(m, "last_opt_step", where);
    s.loss_sum = need("loss_sum").get<std::vector<double>>();
    s.loss_sum.resize(loss_names.size(), 0.0);
    s.has_best = need("has_best").get<bool>();
    s.best_fitness = get_number(m, "best_fitness", where);
    s.best_epoch = static_cast<int>(get_integer(m, "best_epoch", where));
    s.elapsed_s = get_number(m, "elapsed_s", where);
    restore_lr(need("lr"), where);
    s.momentum = get_number(m, "momentum", where);
    restore_results(m.value("results_columns", Json::array()), need("results_rows"),
                    !m.contains("param_groups"), where);
    if (s.index > nb)
        throw InputError(where, "checkpoint position lies beyond the epoch's batches");
    // Positions count global batches, so a run resumes at the same sample on any number of
    // ranks; the change is said where the person watching sees it.
    const auto old_world = m.value("world_size", 1LL);
    if (old_world != rank.world_size)
        log("warning", "resume: the checkpoint was written by " + std::to_string(old_world) +
                           " rank(s); this run has " + std::to_string(rank.world_size) +
                           " (batch " + std::to_string(opt.batch) +
                           " stays the global batch, the data position is kept)");

    const int old_epochs = static_cast<int>(get_integer(m, "epochs", where));
    if (old_epochs != opt.epochs) {
        // Extending (or shortening) a run: the schedule follows the new length, and patience
        // counts from here so a run that stopped early can go on.
        log("info",
            "resume: epochs " + std::to_string(old_epochs) + " -> " + std::to_string(opt.epochs));
        if (s.has_best) s.best_epoch = std::max(s.best_epoch, s.epoch - 1);
    }
    rng_from_bytes(saved.blobs.at("rng"));
}

bool Trainer::Impl::resume_from_checkpoint() {
    std::vector<std::string> rejected;
    auto loaded = store.load_newest_valid(rejected);
    for (const auto& message : rejected)
        log("warning", "resume: skipping checkpoint: " + message);
    if (!loaded) return false;
    // An intact checkpoint that does not fit this run (other task or optimizer) is a
    // configuration problem, not corruption: restore_state throws with its message.
    restore_state(loaded->data, path_to_utf8(loaded->file));
    last_checkpoint_step = s.step;
    emit(make_rollback(s.step));
    log("info", "resumed from " + path_to_utf8(loaded->file.filename()) + " at epoch " +
                    std::to_string(s.epoch + 1) + ", step " + std::to_string(s.step));
    return true;
}

}  // namespace crucible::engine
