// /v1/health, /v1/info, /v1/gpus and the server-wide /v1/stream.
#include "core/jobs/agent_service.h"
#include "core/net/api_version.h"

namespace crucible::jobs {

void AgentService::add_info_routes() {
    auto& server = *server_;
    server.on(net::routes::kHealth, [](const httplib::Request&, httplib::Response& res) {
        net::send_json(
            res, 200,
            {{"status", "ok"}, {"version", CRUCIBLE_VERSION}, {"protocol", net::kProtocolVersion}});
    });
    server.on(net::routes::kInfo, [this](const httplib::Request&, httplib::Response& res) {
        net::AgentInfo info;
        info.version = CRUCIBLE_VERSION;
        info.protocol = net::kProtocolVersion;
        info.min_protocol = net::kMinPeerProtocolVersion;
        info.tls = tls();
        info.tasks = config_.task_schemas;
        info.gpus = gpus_->read();
        info.max_cpu_jobs = config_.scheduler.max_cpu_jobs;
        // Peers are offered only where a run can use them (a cluster address is set).
        if (!config_.cluster.host.empty())
            for (const auto& peer : config_.cluster.peers)
                info.peers.push_back(peer.name);
        net::send_json(res, 200, info.to_json());
    });
    server.on(net::routes::kGpus, [this](const httplib::Request&, httplib::Response& res) {
        net::send_json(res, 200, gpus_->read().to_json());
    });
    server.on(net::routes::kStream, [this](const httplib::Request& req, httplib::Response& res) {
        std::int64_t after = feed_.last_id();
        if (req.has_header("Last-Event-ID"))
            after = std::atoll(req.get_header_value("Last-Event-ID").c_str());
        auto cursor = std::make_shared<std::int64_t>(after);
        auto idle = std::make_shared<int>(0);
        const net::Caller caller = net::HttpServer::identity(req);
        auto watch = std::make_shared<net::TokenWatch>(tokens_, caller.name);
        res.set_header("Cache-Control", "no-cache");
        // Never waits: a call that writes nothing is made again by the server after a short
        // timer, so a stream holds no thread of the pool while it is quiet.
        res.set_chunked_content_provider("text/event-stream", [this, cursor, idle, caller, watch](
                                                                  size_t, httplib::DataSink& sink) {
            if (!watch->still_valid()) return false;  // revoked or expired: end the stream
            bool wrote = false;
            for (const auto& item : feed_.wait_after(*cursor, 0)) {
                *cursor = item.id;
                if (!item.owner.empty() && !caller.may_see(item.owner)) continue;
                if (!sink.write(item.text.data(), item.text.size())) return false;
                wrote = true;
            }
            if (wrote || ++*idle % 20 != 0) {  // ~1 s of 50 ms polls
                if (wrote) *idle = 0;
                return true;
            }
            static const std::string keepalive = ": keepalive\n\n";
            return sink.write(keepalive.data(), keepalive.size());
        });
    });
}

}  // namespace crucible::jobs
