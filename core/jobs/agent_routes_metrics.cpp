// GET /metrics: the agent in the Prometheus text format, for the plant's dashboards (Grafana,
// cloud monitoring agents, Power BI). Any valid token reads it, a viewer's too; a user's token
// sees only that user's jobs, as /v1/jobs does. Per GPU: utilisation, memory, temperature and
// power; per job: its state, and for jobs under way the step, epoch, items/s, time left and the
// latest training and evaluation values (from the end of its events.jsonl, job_snapshot.h).
#include <map>

#include "core/base/prometheus_text.h"
#include "core/jobs/agent_service.h"
#include "core/jobs/job_snapshot.h"

namespace crucible::jobs {

namespace {

void gpu_metrics(PrometheusText& out, const net::GpuReport& report) {
    const auto each = [&](const char* name, const char* type, const char* help, auto value) {
        out.family(name, type, help);
        for (const auto& g : report.gpus)
            out.sample(name, {{"gpu", std::to_string(g.index)}, {"name", g.name}, {"uuid", g.uuid}},
                       value(g));
    };
    each("crucible_gpu_utilization_ratio", "gauge",
         "GPU busy time over NVML's last sample period, 0 to 1",
         [](const net::GpuInfo& g) { return g.utilization / 100.0; });
    each("crucible_gpu_memory_used_bytes", "gauge", "GPU memory in use",
         [](const net::GpuInfo& g) { return static_cast<double>(g.memory_used); });
    each("crucible_gpu_memory_total_bytes", "gauge", "GPU memory",
         [](const net::GpuInfo& g) { return static_cast<double>(g.memory_total); });
    each("crucible_gpu_temperature_celsius", "gauge", "GPU temperature",
         [](const net::GpuInfo& g) { return static_cast<double>(g.temperature); });
    each("crucible_gpu_power_watts", "gauge", "GPU power draw",
         [](const net::GpuInfo& g) { return g.power_w; });
}

// The job's identifying labels, then `extra`.
PrometheusLabels job_labels(const net::JobInfo& j, PrometheusLabels extra = {}) {
    PrometheusLabels labels = {{"job", j.id}, {"task", j.task}, {"name", j.name}};
    labels.insert(labels.end(), extra.begin(), extra.end());
    return labels;
}

void job_metrics(PrometheusText& out, const std::vector<net::JobInfo>& jobs,
                 const JobRegistry& registry) {
    std::map<std::string, int> per_state;
    for (const auto& j : jobs)
        ++per_state[job_state_name(j.state)];
    out.family("crucible_jobs", "gauge", "Jobs by state (the queue is state=\"queued\")");
    for (const auto state :
         {JobState::Queued, JobState::Running, JobState::Paused, JobState::Interrupted,
          JobState::Succeeded, JobState::Failed, JobState::Canceled})
        out.sample("crucible_jobs", {{"state", job_state_name(state)}},
                   per_state[job_state_name(state)]);

    out.family("crucible_job_state", "gauge", "1 for the state each job is in");
    for (const auto& j : jobs)
        out.sample("crucible_job_state", job_labels(j, {{"state", job_state_name(j.state)}}), 1);

    // Jobs under way: what their workers last reported.
    std::vector<std::pair<const net::JobInfo*, JobSnapshot>> active;
    for (const auto& j : jobs)
        if (j.state == JobState::Running || j.state == JobState::Paused)
            active.emplace_back(&j, latest_job_snapshot(registry.folder(j.id)));
    const auto each = [&](const char* name, const char* help, auto field) {
        out.family(name, "gauge", help);
        for (const auto& [j, s] : active)
            if (const auto v = field(s)) out.sample(name, job_labels(*j), static_cast<double>(*v));
    };
    each("crucible_job_step", "Optimizer steps done", [](const JobSnapshot& s) { return s.step; });
    each("crucible_job_total_steps", "Optimizer steps of the whole run",
         [](const JobSnapshot& s) { return s.total_steps; });
    each("crucible_job_epoch", "Epoch under way, from 1",
         [](const JobSnapshot& s) { return s.epoch; });
    each("crucible_job_items_per_second", "Training throughput (images, sequences)",
         [](const JobSnapshot& s) { return s.items_per_s; });
    each("crucible_job_eta_seconds", "Estimated time to the end of the run",
         [](const JobSnapshot& s) { return s.eta_s; });
    const auto values = [&](const char* name, const char* help, auto member) {
        out.family(name, "gauge", help);
        for (const auto& [j, s] : active)
            for (const auto& [metric, v] : s.*member)
                out.sample(name, job_labels(*j, {{"metric", metric}}), v);
    };
    values("crucible_job_train_value",
           "Latest training values (losses train/..., learning rates lr/...)", &JobSnapshot::train);
    values("crucible_job_eval_value",
           "Latest evaluation values (metrics/mAP50(B), val/... losses, ...)", &JobSnapshot::eval);
}

}  // namespace

void AgentService::add_metrics_routes() {
    auto& server = *server_;
    server.on(net::routes::kMetrics, [this](const httplib::Request& req, httplib::Response& res) {
        const net::Caller& caller = net::HttpServer::identity(req);
        std::vector<net::JobInfo> visible;
        for (auto& j : registry_.list())
            if (caller.may_see(j.submitted_by)) visible.push_back(std::move(j));
        PrometheusText out;
        out.family("crucible_agent_info", "gauge", "The agent's version (always 1)");
        out.sample("crucible_agent_info", {{"version", CRUCIBLE_VERSION}}, 1);
        gpu_metrics(out, gpus_->read());
        job_metrics(out, visible, registry_);
        res.status = 200;
        res.set_content(out.text(), PrometheusText::kContentType);
    });
}

}  // namespace crucible::jobs
