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
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream", [this, cursor](size_t, httplib::DataSink& sink) {
                auto items = feed_.wait_after(*cursor, 1000);
                if (items.empty()) {
                    static const std::string keepalive = ": keepalive\n\n";
                    return sink.write(keepalive.data(), keepalive.size());
                }
                for (const auto& [id, text] : items) {
                    if (!sink.write(text.data(), text.size())) return false;
                    *cursor = id;
                }
                return true;
            });
    });
}

}  // namespace crucible::jobs
