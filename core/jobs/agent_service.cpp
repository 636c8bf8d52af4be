#include "core/jobs/agent_service.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/job_control.h"
#include "core/base/options_schema.h"
#include "core/base/secret_store.h"
#include "core/jobs/agent_secrets.h"
#include "core/jobs/gpu_ranks.h"
#include "core/jobs/job_events.h"
#include "core/jobs/retention.h"
#include "core/jobs/worker_query.h"
#include "core/net/job_inputs.h"
#include "core/net/tls.h"

namespace crucible::jobs {

void load_agent_config_file(AgentConfig& config) {
    auto file = config.data_dir / "agent.json";
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return;
    Json j = read_json_file(file);
    const std::string where = path_to_utf8(file);
    if (!j.is_object()) throw InputError(where, "expected a JSON object");
    if (j.contains("roots")) {
        if (!j["roots"].is_array())
            throw InputError(where, "field 'roots': expected a list of folders");
        for (const auto& r : j["roots"]) {
            if (!r.is_string()) throw InputError(where, "field 'roots': expected folder names");
            config.roots.push_back(path_from_utf8(r.get<std::string>()));
        }
    }
    if (j.contains("max_cpu_jobs"))
        config.scheduler.max_cpu_jobs = static_cast<int>(get_integer(j, "max_cpu_jobs", where));
    if (j.contains("alarms")) config.alarms = AlarmThresholds::from_json(j["alarms"], where);
    if (j.contains("quota_gb_per_user"))
        config.quota_bytes_per_user =
            static_cast<std::uint64_t>(get_integer(j, "quota_gb_per_user", where)) << 30;
    if (j.contains("min_free_disk_mb"))
        config.scheduler.min_free_disk_bytes =
            static_cast<std::uint64_t>(get_integer(j, "min_free_disk_mb", where)) << 20;
    if (j.contains("mirror"))
        config.mirror = MirrorConfig::from_json(j["mirror"], where + ": mirror");
    if (j.contains("cluster")) {
        config.cluster = ClusterConfig::from_json(j["cluster"], where + ": cluster");
        config.cluster.take_tokens(*SecretStore::open_file(agent_secrets_file(config.data_dir)),
                                   where + ": cluster");
        for (const auto& peer : config.cluster.peers)
            if (peer.token_in_file)
                spdlog::warn(
                    "{}: cluster: peer '{}' has its token in the clear; move it to the "
                    "agent's secret store with `crucible agent peer add {} --url {}`",
                    where, peer.name, peer.name, peer.endpoint.url);
    }
}

Json describe_tasks(const std::filesystem::path& worker) {
    try {
        return query_worker(worker, "describe").value("tasks", Json::array());
    } catch (const std::exception& e) {
        spdlog::warn("cannot read task schemas: {}", e.what());
        return Json::array();
    }
}

// GPUs the scheduler may hand out: all that NVML reports, unless the configuration names them;
// and how close they are to each other (a multi-GPU job gets the closest free set).
static AgentConfig with_gpu_ids(AgentConfig config) {
    const auto inventory = GpuInventory::open(config.nvml_library);
    const auto report = inventory->read();
    if (config.scheduler.gpu_ids.empty())
        for (const auto& g : report.gpus)
            config.scheduler.gpu_ids.push_back(g.index);
    config.scheduler.mig_gpus = mig_gpus(report);
    config.scheduler.topology = inventory->topology();
    return config;
}

AgentService::AgentService(AgentConfig config)
    : config_(with_gpu_ids(std::move(config))),
      tokens_(std::make_shared<net::TokenStore>(config_.data_dir / "tokens.json")),
      paths_(config_.roots, config_.data_dir),
      registry_(config_.data_dir / "jobs"),
      scheduler_(registry_, config_.scheduler),
      blobs_(config_.data_dir / "blobs"),
      datasets_(config_.data_dir / "datasets", blobs_),
      audit_log_(config_.data_dir / "audit.log") {
    gpus_ = GpuInventory::open(config_.nvml_library);
    net::HttpServerOptions http;
    http.host = config_.host;
    http.port = config_.port;
    http.threads = config_.threads;
    const bool loopback = net::is_loopback_host(config_.host);
    if (!config_.cert_file.empty() || (!loopback && !config_.insecure)) {
        if (config_.cert_file.empty()) {
            auto paths = net::ensure_self_signed_certificate(
                net::self_signed_certificate_paths(config_.data_dir), config_.host);
            config_.cert_file = paths.cert;
            config_.key_file = paths.key;
        }
        http.cert_file = config_.cert_file;
        http.key_file = config_.key_file;
        fingerprint_ = net::certificate_fingerprint_file(config_.cert_file);
    } else if (!loopback) {
        spdlog::warn("serving plain HTTP on {} (--insecure): tokens travel unencrypted",
                     config_.host);
        http.allow_plain_http_off_loopback = true;
    }
    server_ = std::make_unique<net::HttpServer>(
        http, tokens_,
        [this](const std::string& who, const std::string& action, const std::string& detail) {
            audit(who, action, detail);
        });
    registry_.on_change([this](const JobInfo& job) {
        feed_.publish(
            "job", {{"id", job.id}, {"state", job_state_name(job.state)}, {"reason", job.reason}},
            job.submitted_by);
    });
    add_info_routes();
    add_metrics_routes();
    add_job_routes();
    add_data_routes();
    mirror_ = std::make_unique<CheckpointMirror>(config_.mirror, config_.data_dir, registry_);
    cluster_ =
        std::make_unique<ClusterRuns>(config_.cluster, registry_, scheduler_, config_.cluster.host);
    scheduler_.set_start_gate([this](const JobInfo& job) {
        return mirror_->may_start(job) && ClusterRuns::may_start(job);
    });
}

AgentService::~AgentService() {
    stop(true);
}

bool AgentService::tls() const {
    return server_->tls();
}
std::string AgentService::fingerprint() const {
    return fingerprint_;
}

double AgentService::seconds_idle() const {
    const double now = unix_time_now();
    for (const auto& job : registry_.list())
        if (job.state == JobState::Queued || job.state == JobState::Running) {
            last_active_ = now;
            return 0;
        }
    double since = std::max(last_active_.load(), server_->last_authorized_request());
    if (since <= 0) since = last_active_ = now;  // counted from the first call
    return now - since;
}

int AgentService::start() {
    if (auto n = datasets_.clean_partials())
        spdlog::info("removed {} dataset folders left unfinished by an interrupted push", n);
    std::vector<JobInfo> orphans;
    for (const auto& job : registry_.load()) {
        auto dir = registry_.folder(job.id);
        // A worker that outlived the agent is asked to checkpoint and stop, and its job waits
        // for it: exactly one worker ever owns a job folder. The API serves meanwhile.
        if (is_same_process(job.pid, job.worker_started)) {
            spdlog::info("job {}: worker {} outlived the agent; asking it to checkpoint and stop",
                         job.id, job.pid);
            write_stop_request(JobFolder{dir}, StopRequest::Checkpoint);
            scheduler_.hold(job.id, job.gpu_ids);
            orphans.push_back(job);
            continue;  // its events file is the old worker's until it is gone
        }
        spdlog::info(
            "job {} was running when the agent stopped: it resumes from its last checkpoint",
            job.id);
        append_job_event(dir, make_status(job_state_name(JobState::Interrupted),
                                          "the agent stopped while the job ran; resuming"));
    }
    scheduler_.start();
    cluster_->start();
    mirror_->start(
        [this] { scheduler_.wake(); },
        [this](const std::string& id, const Event& e) { scheduler_.raise_job_event(id, e); });
    int port = server_->start();
    telemetry_running_ = true;
    if (!orphans.empty()) orphans_ = std::thread([this, orphans] { settle_orphans(orphans); });
    telemetry_ = std::thread([this] {
        AlarmMonitor monitor(config_.alarms);
        auto next_cleanup = std::chrono::steady_clock::now();
        while (telemetry_running_) {
            if (std::chrono::steady_clock::now() >= next_cleanup) {
                auto r = apply_retention(registry_, config_.data_dir / "blobs",
                                         config_.data_dir / "datasets", config_.retention,
                                         unix_time_now(), config_.data_dir / "inputs");
                if (r.bytes_freed)
                    spdlog::info(
                        "retention: removed {} checkpoints, {} blobs, {} job inputs and {} "
                        "stalled uploads ({} MB)",
                        r.checkpoint_files_removed, r.blobs_removed, r.inputs_removed,
                        r.partial_uploads_removed, r.bytes_freed >> 20);
                next_cleanup += std::chrono::hours(1);
            }
            try {
                watch_gpus(monitor);
            } catch (const std::exception& e) {
                spdlog::warn("GPU telemetry: {}", e.what());
            }
            const auto until = std::chrono::steady_clock::now() + config_.telemetry_period;
            while (telemetry_running_ && std::chrono::steady_clock::now() < until)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    return port;
}

void AgentService::settle_orphans(std::vector<JobInfo> orphans) {
    const auto deadline = std::chrono::steady_clock::now() + config_.orphan_grace;
    while (!orphans.empty() && telemetry_running_) {
        const bool late = std::chrono::steady_clock::now() >= deadline;
        std::erase_if(orphans, [&](const JobInfo& job) {
            if (is_same_process(job.pid, job.worker_started)) {
                if (!late) return false;
                spdlog::warn("job {}: worker {} did not stop within {} s; killing it", job.id,
                             job.pid, config_.orphan_grace.count());
                kill_process(job.pid);
                return false;  // released once it is really gone
            }
            spdlog::info("job {}: its old worker is gone; the job resumes", job.id);
            append_job_event(registry_.folder(job.id),
                             make_status(job_state_name(JobState::Interrupted),
                                         "the agent stopped while the job ran; resuming"));
            scheduler_.release(job.id);
            return true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

void AgentService::watch_gpus(AlarmMonitor& monitor) {
    GpuReport report = gpus_->read();
    if (!report.nvml) return;
    feed_.publish("gpus", report.to_json());
    std::map<std::string, std::vector<int>> running;
    for (const auto& job : registry_.list())
        if (job.state == JobState::Running && !job.gpu_ids.empty()) running[job.id] = job.gpu_ids;
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    for (auto& alarm : monitor.check(report, running, now)) {
        alarm.event.t = unix_time_now();
        if (alarm.event.fields.value("alarm", std::string()) == "gpu_memory")
            alarm.event.fields["message"] = alarm.event.fields.value("message", std::string()) +
                                            allocator_note(registry_.folder(alarm.job_id));
        spdlog::warn("job {}: alarm {}: {}", alarm.job_id,
                     alarm.event.fields.value("alarm", std::string()),
                     alarm.event.fields.value("message", std::string()));
        scheduler_.raise_job_event(alarm.job_id, alarm.event);
        Json data = event_to_json(alarm.event);
        data.erase("seq");
        data["job"] = alarm.job_id;
        const auto job = registry_.get(alarm.job_id);
        feed_.publish("alarm", data, job ? job->submitted_by : std::string());
    }
}

void AgentService::stop(bool leave_workers_running) {
    telemetry_running_ = false;
    if (mirror_) mirror_->stop();
    if (telemetry_.joinable()) telemetry_.join();
    if (orphans_.joinable()) orphans_.join();
    if (server_) server_->stop();
    if (cluster_) cluster_->stop();
    scheduler_.stop(leave_workers_running);
}

void AgentService::audit(const std::string& who, const std::string& action,
                         const std::string& detail) {
    // Reads are synced within a second; anything else at once.
    audit_log_.write(who, action, detail, 0, action != "GET" && action != "HEAD");
}

// "blob:<sha256>/<file name>" (an uploaded file, e.g. pretrained weights) becomes
// <data>/inputs/<sha256>/<file name>: a hard link to the blob (a copy where links fail), so the
// task sees the file under its own name and extension.
std::string AgentService::blob_input_path(const std::string& option, const std::string& ref,
                                          const net::Caller& caller) const {
    const auto slash = ref.find('/');
    const std::string sha = ref.substr(0, slash);
    const std::string name = slash == std::string::npos ? std::string() : ref.substr(slash + 1);
    if (!BlobStore::is_valid_hash(sha))
        throw InputError(option,
                         "'blob:" + ref + "' does not start with a SHA-256 (64 hex digits)");
    if (name.empty() || name == "." || name == ".." || name.size() > 255 ||
        name.find_first_of(std::string("/\\:\0", 4)) != std::string::npos || !is_valid_utf8(name) ||
        is_reserved_device_name(name))
        throw InputError(option, "'blob:" + ref + "' needs a plain file name after the hash");
    if (!blobs_.visible_to(sha, caller))
        throw InputError(option,
                         "no blob " + sha + " of yours on this agent; upload the file first");
    const auto target = config_.data_dir / "inputs" / sha / path_from_utf8(name);
    std::error_code ec;
    if (!std::filesystem::exists(target, ec)) {
        std::filesystem::create_directories(target.parent_path(), ec);
        link_or_copy_atomically(blobs_.path(sha), target);
    }
    return path_to_utf8(target);
}

std::string AgentService::resolve_server_path(const std::string& option, const std::string& value,
                                              const net::Caller& caller) const {
    if (value.rfind("dataset:", 0) == 0) {
        std::string id = value.substr(8);
        if (!BlobStore::is_valid_hash(id))
            throw InputError(option, "unknown dataset id '" + id + "'");
        auto dir = datasets_.folder(id);
        std::error_code ec;
        if (!datasets_.visible_to(id, caller))
            throw InputError(option, "no dataset " + id + " of yours on this agent; push it first");
        auto yaml = dir / "data.yaml";
        if (!std::filesystem::exists(yaml, ec)) return path_to_utf8(dir);
        paths_.check_data_yaml(option, yaml, dir);
        return path_to_utf8(yaml);
    }
    if (value.rfind("blob:", 0) == 0) return blob_input_path(option, value.substr(5), caller);
    return paths_.resolve(option, value);
}

Json AgentService::resolve_job_options(const std::string& task, const std::string& command,
                                       const Json& options, const net::Caller& caller) const {
    const Json task_json = net::find_task_schema(config_.task_schemas, task);
    if (task_json.is_null()) {
        std::string known;
        for (const auto& s : config_.task_schemas)
            known += (known.empty() ? "" : ", ") + s.value("task", std::string());
        throw InputError("task", "unknown task '" + task + "' (this agent has: " +
                                     (known.empty() ? "none" : known) + ")");
    }
    Json schema_json = task_json;
    if (!command.empty()) {
        schema_json = net::find_command_schema(config_.task_schemas, task, command);
        if (schema_json.is_null()) {
            std::string known;
            if (task_json.contains("commands") && task_json["commands"].is_object())
                for (const auto& [name, c] : task_json["commands"].items())
                    known += (known.empty() ? "" : ", ") + name;
            throw InputError("command", "task " + task + " has no command '" + command +
                                            "' that runs as a job (it has: " +
                                            (known.empty() ? "none" : known) + ")");
        }
        // Where the command writes is the job's folder: its artifacts.
        const std::string output = schema_json.value("output_option", std::string());
        if (!output.empty() && options.contains(output))
            throw InputError(output,
                             "a job's output stays in its folder; download it from the "
                             "job's artifacts instead");
    }
    const OptionSchema schema = OptionSchema::from_json(schema_json);
    Json resolved = schema.resolve(options);
    for (const auto& spec : schema.options())
        if (spec.type == OptionType::Path && resolved[spec.name].is_string() &&
            !resolved[spec.name].get<std::string>().empty())
            resolved[spec.name] =
                resolve_server_path(spec.name, resolved[spec.name].get<std::string>(), caller);
    return resolved;
}

}  // namespace crucible::jobs
