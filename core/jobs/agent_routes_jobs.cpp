// /v1/jobs: submit, list, get, cancel, pause, resume, delete, events (SSE) and artifacts.
#include <algorithm>
#include <chrono>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/shared_read_file.h"
#include "core/jobs/agent_service.h"
#include "core/jobs/event_follower.h"
#include "core/jobs/gpu_ranks.h"
#include "core/net/job_inputs.h"

namespace crucible::jobs {
namespace {

enum class Access { See, Use };

// The job the request names, when its caller may see it (Access::See) or control and download
// it (Access::Use). Someone else's job answers 404 as if it did not exist: ids are not
// secrets, but which jobs other users run is.
std::optional<JobInfo> find_job(JobRegistry& registry, const httplib::Request& req,
                                httplib::Response& res, Access access = Access::See) {
    const std::string id = req.matches[1];
    if (!is_valid_job_id(id)) {
        net::send_error(res, 400, "bad_job_id", "job ids hold letters, digits and '-' only");
        return std::nullopt;
    }
    const net::Caller& caller = net::HttpServer::identity(req);
    auto job = registry.get(id);
    if (!job || !caller.may_see(job->submitted_by)) {
        net::send_error(res, 404, "no_such_job", "no job " + id + " on this agent");
        return std::nullopt;
    }
    if (access == Access::Use && !caller.may_use(job->submitted_by)) {
        net::send_error(res, 403, "not_yours",
                        caller.may_write()
                            ? "job " + id + " belongs to " + job->submitted_by
                            : "the token '" + caller.name + "' is a viewer: it changes nothing");
        return std::nullopt;
    }
    return job;
}

// Files under a job folder that clients may download: weights, artifacts, results, logs.
std::vector<std::filesystem::path> artifact_files(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (!it->is_regular_file()) continue;
        auto rel = it->path().lexically_relative(dir);
        if (!JobFolder::is_bookkeeping(rel)) out.push_back(rel);
    }
    std::sort(out.begin(), out.end());
    return out;
}

const char* mime_for(const std::filesystem::path& p) {
    auto ext = path_to_utf8(p.extension());
    if (ext == ".png") return "image/png";
    if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
    if (ext == ".json" || ext == ".jsonl") return "application/json";
    if (ext == ".csv" || ext == ".log" || ext == ".txt" || ext == ".yaml")
        return "text/plain; charset=utf-8";
    return "application/octet-stream";
}

}  // namespace

void AgentService::add_job_routes() {
    auto& server = *server_;

    server.on(net::routes::kSubmitJob, [this](const httplib::Request& req, httplib::Response& res) {
        if (req.get_header_value("Content-Type").find("application/json") == std::string::npos) {
            net::send_error(res, 415, "wrong_content_type", "send the job as application/json");
            return;
        }
        const net::Caller& caller = net::HttpServer::identity(req);
        if (!caller.may_write()) {
            net::send_error(res, 403, "read_only",
                            "the token '" + caller.name + "' is a viewer: it cannot submit");
            return;
        }
        Json body = parse_json(req.body, "request body");
        net::SubmitRequest request = net::SubmitRequest::from_json(body);
        JobInfo job = JobInfo::from_request(request);
        if (!job.run_id.empty()) {
            if (std::string busy = mirror_->check_submit(job.run_id); !busy.empty()) {
                net::send_error(res, 409, "run_active", busy);
                return;
            }
        }
        plan_gpu_ranks(job, config_.scheduler.gpu_ids, config_.scheduler.mig_gpus);
        if (!job.command.empty() && !job.run_id.empty())
            throw InputError("run_id", "only training jobs are mirrored, not a " + job.command);
        // A run over several servers: the share a peer sends, or the world this agent plans.
        std::optional<ServerShare> share = request.share;
        if (share) cluster_->accept_share(*share);
        std::optional<ClusterPlan> cluster;
        JobInfo stored;
        try {
            cluster_->check_servers(request.servers);
            job.options = resolve_job_options(job.task, job.command, job.options, caller);
            job.submitted_by = caller.name;
            if (!request.servers.empty()) {
                cluster = cluster_->plan(job, request.servers);
                share = cluster->local;
            }
            stored = registry_.add(job, share);
        } catch (...) {  // the port taken for the share's or the run's gate goes back
            if (share) cluster_->release_port(share->gate_port);
            throw;
        }
        if (share && !cluster) cluster_->hold_port(share->gate_port, stored.id);
        if (cluster)
            cluster_->launch(stored, *cluster, request.servers,
                             net::find_task_schema(config_.task_schemas, stored.task));
        audit(job.submitted_by, "submit", stored.id + " " + stored.task);
        scheduler_.wake();
        net::send_json(res, 201, stored.to_json());
    });

    server.on(net::routes::kListJobs, [this](const httplib::Request& req, httplib::Response& res) {
        const net::Caller& caller = net::HttpServer::identity(req);
        Json list = Json::array();
        for (const auto& j : registry_.list())
            if (caller.may_see(j.submitted_by)) list.push_back(j.to_json());
        net::send_json(res, 200, {{"jobs", list}});
    });

    server.on(net::routes::kGetJob, [this](const httplib::Request& req, httplib::Response& res) {
        if (auto job = find_job(registry_, req, res)) net::send_json(res, 200, job->to_json());
    });

    server.on(net::routes::kDeleteJob, [this](const httplib::Request& req, httplib::Response& res) {
        auto job = find_job(registry_, req, res, Access::Use);
        if (!job) return;
        if (!is_final_state(job->state) && job->state != JobState::Paused) {
            net::send_error(res, 409, "job_active",
                            "job " + job->id + " is " + job_state_name(job->state) +
                                "; cancel it before deleting");
            return;
        }
        registry_.remove(job->id);
        audit(net::HttpServer::caller(req), "delete", job->id);
        net::send_json(res, 200, {{"deleted", job->id}});
    });

    auto control = [this](const char* action, std::string (Scheduler::*fn)(const std::string&)) {
        return [this, action, fn](const httplib::Request& req, httplib::Response& res) {
            auto job = find_job(registry_, req, res, Access::Use);
            if (!job) return;
            // The other servers' ranks hold no checkpoint of a run to resume from (rank 0 writes
            // them on the server serving the store).
            if (fn == &Scheduler::pause && (!job->parts.empty() || !job->part_of.empty())) {
                net::send_error(res, 409, "not_possible",
                                "job " + job->id +
                                    " is a run over several servers, which cannot pause yet "
                                    "(only its first server keeps checkpoints); cancel it");
                return;
            }
            std::string err = (scheduler_.*fn)(job->id);
            audit(net::HttpServer::caller(req), action, job->id);
            if (!err.empty())
                net::send_error(res, 409, "not_possible", err);
            else
                net::send_json(res, 202, {{"id", job->id}, {"requested", action}});
        };
    };
    server.on(net::routes::kCancelJob, control("cancel", &Scheduler::cancel));
    server.on(net::routes::kPauseJob, control("pause", &Scheduler::pause));
    server.on(net::routes::kResumeJob, control("resume", &Scheduler::resume));

    // Events: SSE by default; ?format=json returns the events after `after` as one array.
    server.on(net::routes::kJobEvents, [this](const httplib::Request& req, httplib::Response& res) {
        auto job = find_job(registry_, req, res);
        if (!job) return;
        std::int64_t after = -1;
        if (req.has_param("after")) after = std::atoll(req.get_param_value("after").c_str());
        if (req.has_header("Last-Event-ID"))
            after = std::atoll(req.get_header_value("Last-Event-ID").c_str());
        auto file = JobFolder{registry_.folder(job->id)}.events();
        auto follower = std::make_shared<EventFollower>(file, after);
        if (req.get_param_value("format") == "json") {
            // {"events": [...]} streamed a slice of the log at a time: a long log is never held
            // whole, by one reader or by many.
            auto items = std::make_shared<std::size_t>(0);
            res.set_chunked_content_provider(
                "application/json", [follower, items](size_t offset, httplib::DataSink& sink) {
                    std::size_t count = 0;
                    std::string text = offset == 0 ? "{\"events\":[" : "";
                    text += follower->poll_json_items(count, *items > 0);
                    *items += count;
                    if (!follower->caught_up()) return sink.write(text.data(), text.size());
                    text += "]}";
                    if (!sink.write(text.data(), text.size())) return false;
                    sink.done();
                    return true;
                });
            return;
        }
        auto idle = std::make_shared<int>(0);
        std::string id = job->id;
        // A revoked or expired token ends the stream within seconds (as /v1/stream does).
        auto watch =
            std::make_shared<net::TokenWatch>(tokens_, net::HttpServer::identity(req).name);
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider("text/event-stream", [this, follower, idle, id, watch](
                                                                  size_t, httplib::DataSink& sink) {
            if (!watch->still_valid()) return false;
            // Never waits: the server calls again at once after a large write, 20 ms after
            // a small one (so events of a busy job gather) and 50 ms after a call that wrote
            // nothing (HttpServerOptions::stream_poll, stream_gather).
            std::size_t count = 0;
            std::string text = follower->poll_sse(count);
            // Slices holding only events the client has (a resume far into a long log):
            // a few more now rather than one per call.
            for (int i = 0; count == 0 && !follower->caught_up() && i < 8; ++i)
                text = follower->poll_sse(count);
            if (count > 0) {
                *idle = 0;
                return sink.write(text.data(), text.size());
            }
            if (!follower->caught_up()) return true;
            auto current = registry_.get(id);
            if (!current || is_final_state(current->state)) {
                // Everything written: one last look, then end the stream.
                text = follower->poll_sse(count);
                if (count > 0 && !sink.write(text.data(), text.size())) return false;
                if (follower->caught_up()) sink.done();
                return true;
            }
            if (++*idle % 300 == 0) {  // ~15 s of calls 50 ms apart
                static const std::string keepalive = ": keepalive\n\n";
                return sink.write(keepalive.data(), keepalive.size());
            }
            return true;
        });
    });

    server.on(net::routes::kJobArtifacts,
              [this](const httplib::Request& req, httplib::Response& res) {
                  auto job = find_job(registry_, req, res, Access::Use);
                  if (!job) return;
                  auto dir = registry_.folder(job->id);
                  std::vector<net::ArtifactEntry> list;
                  for (const auto& rel : artifact_files(dir)) {
                      std::error_code ec;
                      list.push_back({path_to_utf8(rel.generic_u8string()),
                                      std::filesystem::file_size(dir / rel, ec)});
                  }
                  net::send_json(res, 200, net::artifacts_to_json(list));
              });

    server.on(net::routes::kJobArtifact, [this](const httplib::Request& req,
                                                httplib::Response& res) {
        auto job = find_job(registry_, req, res, Access::Use);
        if (!job) return;
        auto dir = registry_.folder(job->id);
        std::filesystem::path rel;
        try {
            rel = path_from_utf8(std::string(req.matches[2]));
        } catch (const InputError&) {
            net::send_error(res, 400, "bad_path", "artifact path is not UTF-8");
            return;
        }
        auto file = dir / rel;
        std::error_code ec;
        if (rel.is_absolute() || !is_path_inside(dir, file) ||
            !std::filesystem::is_regular_file(file, ec)) {
            net::send_error(res, 404, "no_such_artifact",
                            "no artifact '" + std::string(req.matches[2]) + "' in job " + job->id);
            return;
        }
        audit(net::HttpServer::caller(req), "download", job->id + "/" + path_to_generic_utf8(rel));
        // Shared for deletion: the trainer may replace this file (a new best.pt) while the
        // client downloads; the download goes on with the version it started.
        std::shared_ptr<SharedReadFile> stream;
        try {
            stream = std::make_shared<SharedReadFile>(file);
        } catch (const std::exception&) {
            // Built by append: GCC 12 at -O3 reports a false -Wrestrict for "literal" + string.
            std::string message = "artifact '";
            message.append(req.matches[2]).append("' of job ").append(job->id).append(" is gone");
            net::send_error(res, 404, "no_such_artifact", message);
            return;
        }
        const auto size = static_cast<size_t>(stream->size());
        // Size and modification time: a client resuming a download checks that the file it
        // has a part of is still the one served (a new best.pt has another tag).
        const auto mtime = std::filesystem::last_write_time(file, ec).time_since_epoch().count();
        res.set_header("ETag", "\"" + std::to_string(size) + "-" +
                                   std::to_string(static_cast<long long>(mtime)) + "\"");
        res.set_header("Accept-Ranges", "bytes");
        res.set_content_provider(size, mime_for(file),
                                 [stream](size_t offset, size_t length, httplib::DataSink& sink) {
                                     std::vector<char> buf(std::min<size_t>(length, 1 << 20));
                                     size_t n = 0;
                                     try {
                                         n = stream->read_at(offset, buf.data(), buf.size());
                                     } catch (const std::exception&) {
                                         return false;
                                     }
                                     return n > 0 && sink.write(buf.data(), n);
                                 });
    });
}

}  // namespace crucible::jobs
