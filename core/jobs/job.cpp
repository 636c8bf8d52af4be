#include "core/jobs/job.h"

#include <chrono>
#include <ctime>

#include "core/base/error.h"
#include "core/base/sha256.h"

namespace crucible::jobs {

Json JobRecord::to_json() const {
    return {{"id", id},
            {"name", name},
            {"task", task},
            {"options", options},
            {"priority", priority},
            {"gpus", gpus},
            {"state", job_state_name(state)},
            {"reason", reason},
            {"submitted", submitted},
            {"started", started},
            {"finished", finished},
            {"gpu_ids", gpu_ids},
            {"requested_gpu", requested_gpu ? Json(*requested_gpu) : Json()},
            {"pid", pid},
            {"resume", resume},
            {"submitted_by", submitted_by}};
}

JobRecord JobRecord::from_json(const Json& j, const std::string& where) {
    JobRecord r;
    r.id = get_string(j, "id", where);
    r.name = j.value("name", std::string());
    r.task = get_string(j, "task", where);
    r.options = j.value("options", Json::object());
    r.priority = j.value("priority", 0);
    r.gpus = j.value("gpus", 0);
    r.state = parse_job_state(get_string(j, "state", where));
    r.reason = j.value("reason", std::string());
    r.submitted = j.value("submitted", 0.0);
    r.started = j.value("started", 0.0);
    r.finished = j.value("finished", 0.0);
    r.gpu_ids = j.value("gpu_ids", std::vector<int>{});
    if (j.contains("requested_gpu") && j["requested_gpu"].is_number_integer())
        r.requested_gpu = j["requested_gpu"].get<int>();
    r.pid = j.value("pid", 0L);
    r.resume = j.value("resume", false);
    r.submitted_by = j.value("submitted_by", std::string());
    return r;
}

JobRecord job_from_submit(const Json& body) {
    if (!body.is_object())
        throw InputError("body", "expected a JSON object {\"task\":..., \"options\":{...}}");
    JobRecord r;
    r.task = get_string(body, "task", "body");
    if (body.contains("options")) {
        if (!body["options"].is_object())
            throw InputError("options", "expected an object of task options");
        r.options = body["options"];
    }
    if (body.contains("name")) {
        if (!body["name"].is_string()) throw InputError("name", "expected text");
        r.name = body["name"].get<std::string>();
        if (r.name.size() > 200) throw InputError("name", "at most 200 characters");
    }
    if (body.contains("priority")) {
        if (!body["priority"].is_number_integer())
            throw InputError("priority", "expected an integer");
        r.priority = body["priority"].get<int>();
    }
    if (body.contains("gpus")) {
        if (!body["gpus"].is_number_integer() || body["gpus"].get<int>() < 0)
            throw InputError("gpus", "expected a non-negative integer");
        r.gpus = body["gpus"].get<int>();
        if (r.gpus > 1)
            throw InputError(
                "gpus",
                "a job can use one GPU for now: training on several GPUs needs distributed "
                "training, which this version does not have yet");
    }
    if (body.contains("gpu")) {
        if (!body["gpu"].is_number_integer() || body["gpu"].get<int>() < 0)
            throw InputError("gpu", "expected the index of one of the agent's GPUs (0, 1, ...)");
        r.requested_gpu = body["gpu"].get<int>();
        r.gpus = 1;
    }
    return r;
}

std::string new_job_id() {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
#ifdef _WIN32
    gmtime_s(&tm, &now);
#else
    gmtime_r(&now, &tm);
#endif
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
    return std::string("j") + buf + "-" + random_hex(4);
}

bool is_valid_job_id(const std::string& id) {
    if (id.empty() || id.size() > 64) return false;
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
    return true;
}

}  // namespace crucible::jobs
