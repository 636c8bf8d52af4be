#include "core/jobs/cluster_runs.h"

#include <spdlog/spdlog.h>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/sha256.h"
#include "core/jobs/rank_launcher.h"
#include "core/net/job_inputs.h"

namespace crucible::jobs {
namespace {

constexpr auto kWatchPeriod = std::chrono::seconds(1);

std::string option_text(const Json& options, const char* name) {
    auto it = options.find(name);
    return it != options.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int option_integer(const Json& options, const char* name, int fallback) {
    auto it = options.find(name);
    return it != options.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

// How many ranks a peer runs: the GPUs named for it, else as many as the job takes here.
int ranks_on(const net::ServerRanks& server, const net::JobInfo& job, int local) {
    if (!server.gpu.empty()) return static_cast<int>(server.gpu.size());
    if (server.gpus) return std::max(*server.gpus, 1);
    return job.gpus > 0 ? job.gpus : local;
}

bool asks_gpus(const net::ServerRanks& server, const net::JobInfo& job) {
    return !server.gpu.empty() || server.gpus.value_or(0) > 0 || job.gpus > 0 ||
           !job.requested_gpus.empty();
}

// What a person recognises in ServerShare::gloo_transport.
std::string gloo_transport_name(const std::string& transport) {
    return transport == "uv" ? "libuv (LibTorch for Windows)" : "TCP (LibTorch for Linux)";
}

}  // namespace

ClusterRuns::ClusterRuns(ClusterConfig config, JobRegistry& registry, Scheduler& scheduler,
                         std::string agent_name)
    : config_(std::move(config)),
      registry_(registry),
      scheduler_(scheduler),
      agent_name_(std::move(agent_name)) {}

ClusterRuns::~ClusterRuns() {
    stop();
}

void ClusterRuns::start() {
    std::lock_guard lock(mutex_);
    if (running_) return;
    running_ = true;
    thread_ = std::thread([this] { loop(); });
}

void ClusterRuns::stop() {
    {
        std::lock_guard lock(mutex_);
        if (!running_) return;
        running_ = false;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void ClusterRuns::check_servers(const std::vector<net::ServerRanks>& servers) const {
    if (servers.empty()) return;
    if (config_.host.empty())
        throw InputError("servers",
                         "this agent's agent.json has no \"cluster\": {\"host\": ...}, the "
                         "address the other servers reach it at");
    for (const auto& s : servers)
        if (!config_.find(s.server)) {
            std::string known;
            for (const auto& p : config_.peers)
                known += (known.empty() ? "" : ", ") + p.name;
            throw InputError("servers", "'" + s.server +
                                            "' is not a peer in agent.json's "
                                            "\"cluster\" (peers: " +
                                            (known.empty() ? "none" : known) + ")");
        }
}

ClusterPlan ClusterRuns::plan(const net::JobInfo& job,
                              const std::vector<net::ServerRanks>& servers) {
    check_servers(servers);
    if (!job.command.empty())
        throw InputError("servers", "a " + job.command + " job runs on one server");
    const int local =
        plan_ranks(option_text(job.options, "device"), option_integer(job.options, "ranks", 1))
            .world_size();
    ClusterPlan plan;
    int world = local;
    for (const auto& s : servers) {
        ServerShare share;
        share.first_rank = world;
        plan.shares.push_back(share);
        world += ranks_on(s, job, local);
    }
    const int port = take_port("servers");
    plan.local.first_rank = 0;
    plan.local.host = config_.host;
    plan.local.gate_port = port;  // the store's gate is this server's gate
    // One key per run: it opens the store's gate to the run's servers and nobody else.
    const std::string key = random_hex(kShareKeyHexDigits / 2);
    const auto fill = [&](ServerShare& s) {
        s.world_size = world;
        s.store_host = config_.host;
        s.store_port = port;
        s.key = key;
        s.gloo_transport = kGlooTransport;
    };
    fill(plan.local);
    for (auto& s : plan.shares)
        fill(s);
    return plan;
}

bool ClusterRuns::may_start(const net::JobInfo& job) {
    return !(job.state == JobState::Interrupted && (!job.parts.empty() || !job.part_of.empty()));
}

int ClusterRuns::take_port(const std::string& field) {
    // A port of the range no run of this agent holds and nobody listens on now.
    std::lock_guard lock(mutex_);
    for (int p = config_.first_port; p <= config_.last_port; ++p)
        if (!ports_.count(p) && tcp_port_free("0.0.0.0", p)) {
            ports_[p] = "";  // held until hold_port() names the job
            return p;
        }
    throw InputError(field, "no free rendezvous port in agent.json's cluster ports " +
                                std::to_string(config_.first_port) + "-" +
                                std::to_string(config_.last_port));
}

void ClusterRuns::hold_port(int port, const std::string& job_id) {
    std::lock_guard lock(mutex_);
    ports_[port] = job_id;
}

void ClusterRuns::release_port(int port) {
    std::lock_guard lock(mutex_);
    ports_.erase(port);
}

void ClusterRuns::accept_share(ServerShare& share) {
    if (!config_.peer_at(share.store_host))
        throw InputError("share", "the run's store at " + share.store_host +
                                      " is not at one of this agent's peers (agent.json "
                                      "\"cluster\": \"peers\"); only peers may start ranks here");
    // Refused now rather than found out when the ranks wait for each other until the timeout.
    if (!share.gloo_transport.empty() && share.gloo_transport != kGlooTransport)
        throw InputError("share", "the server at " + share.store_host + " runs Gloo over " +
                                      gloo_transport_name(share.gloo_transport) +
                                      " and this one over " + gloo_transport_name(kGlooTransport) +
                                      ": ranks of the two cannot talk to each other, so a run "
                                      "cannot mix Windows and Linux servers");
    share.host = config_.host;
    share.gate_port = take_port("share");
}

void ClusterRuns::launch(const net::JobInfo& job, const ClusterPlan& plan,
                         const std::vector<net::ServerRanks>& servers, const Json& task_schema) {
    hold_port(plan.local.store_port, job.id);
    {
        std::lock_guard lock(mutex_);
        launches_.push_back({job, plan, servers, task_schema});
    }
    wake_.notify_all();
}

void ClusterRuns::loop() {
    std::unique_lock lock(mutex_);
    while (running_) {
        if (!launches_.empty()) {
            const Launch next = std::move(launches_.front());
            launches_.pop_front();
            lock.unlock();
            send_shares(next);
            lock.lock();
            continue;
        }
        lock.unlock();
        watch();
        lock.lock();
        wake_.wait_for(lock, kWatchPeriod, [this] { return !running_ || !launches_.empty(); });
    }
}

void ClusterRuns::send_shares(const Launch& launch) {
    for (std::size_t i = 0; i < launch.servers.size(); ++i) {
        const net::ServerRanks& server = launch.servers[i];
        const PeerAgent* peer = config_.find(server.server);
        try {
            net::ApiClient client(peer->endpoint);
            net::SubmitRequest request;
            request.task = launch.job.task;
            request.name = launch.job.name;
            request.priority = launch.job.priority;
            // The inputs as this agent holds them go up to the peer first.
            request.options =
                net::upload_local_inputs(client, launch.task_schema, launch.job.options);
            if (asks_gpus(server, launch.job)) {
                // The peer's scheduler picks (or checks) its GPUs and names the device itself.
                request.options.erase("device");
                request.options.erase("ranks");
                request.gpu = server.gpu;
                request.gpus = ranks_on(server, launch.job, 1);
            }
            request.share = launch.plan.shares[i];
            request.part_of = agent_name_ + "/" + launch.job.id;
            const net::JobInfo part = client.submit(request);
            registry_.update(launch.job.id, [&](net::JobInfo& j) {
                if (i < j.parts.size()) j.parts[i].job = part.id;
            });
            spdlog::info("job {}: ranks {}.. run on server {} as its job {}", launch.job.id,
                         launch.plan.shares[i].first_rank, server.server, part.id);
        } catch (const std::exception& e) {
            end_run(launch.job.id, "server " + server.server +
                                       " could not take its ranks of the run: " + e.what());
            return;
        }
    }
}

void ClusterRuns::end_run(const std::string& id, const std::string& why) {
    spdlog::warn("job {}: {}", id, why);
    scheduler_.raise_job_event(id, make_log("error", why));
    scheduler_.cancel(id);
}

void ClusterRuns::watch() {
    for (const net::JobInfo& job : registry_.list()) {
        // Interrupted (the agent or its worker stopped): the other servers hold no checkpoint
        // to resume their ranks from, so the run (or this share of it) ends rather than resume
        // half of its ranks (may_start keeps it from starting again meanwhile).
        if (job.state == JobState::Interrupted && (!job.parts.empty() || !job.part_of.empty())) {
            end_run(job.id,
                    "a run over several servers cannot resume yet (only its first "
                    "server keeps checkpoints); submit it again");
            continue;  // canceled now: the next look ends its shares
        }
        const bool ended = is_final_state(job.state);
        if (ended) {  // a run's or a share's gate port
            std::lock_guard lock(mutex_);
            for (auto it = ports_.begin(); it != ports_.end();)
                it = it->second == job.id ? ports_.erase(it) : std::next(it);
        }
        if (job.parts.empty()) continue;
        for (std::size_t i = 0; i < job.parts.size(); ++i) {
            const net::JobInfo::Part& part = job.parts[i];
            if (part.settled) continue;
            const PeerAgent* peer = config_.find(part.server);
            bool settle = part.job.empty() && ended;
            if (peer && !part.job.empty()) {
                try {
                    net::ApiClient client(peer->endpoint);
                    const net::JobInfo theirs = client.job(part.job);
                    if (ended && !is_final_state(theirs.state)) {
                        client.control(part.job, net::JobAction::Cancel);
                        settle = true;
                    } else if (is_final_state(theirs.state)) {
                        settle = true;
                        if (!ended && theirs.state != JobState::Succeeded)
                            end_run(job.id, "the ranks on server " + part.server + " (its job " +
                                                part.job + ") ended " +
                                                job_state_name(theirs.state) + ": " +
                                                theirs.reason);
                    }
                } catch (const std::exception& e) {
                    spdlog::warn("job {}: cannot reach server {} about its job {}: {}", job.id,
                                 part.server, part.job, e.what());
                }
            }
            if (settle)
                registry_.update(job.id, [&](net::JobInfo& j) {
                    if (i < j.parts.size()) j.parts[i].settled = true;
                });
        }
    }
}

}  // namespace crucible::jobs
