#include "core/net/api_types.h"

#include <algorithm>
#include <limits>

#include "core/base/error.h"

namespace crucible::net {
namespace {

// Optional fields of an object: a missing or null field keeps `fallback`, a field of another
// type is an InputError naming "<where>.<name>".
const Json* field(const Json& object, const char* name) {
    auto it = object.find(name);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string at(const std::string& where, const char* name) {
    return where.empty() ? name : where + "." + name;
}

void expect_object(const Json& json, const std::string& where) {
    if (!json.is_object())
        throw InputError(where.empty() ? "body" : where,
                         std::string("expected an object, got ") + json_type_name(json));
}

std::string text(const Json& object, const char* name, const std::string& where,
                 std::string fallback = {}) {
    const Json* f = field(object, name);
    if (!f) return fallback;
    if (!f->is_string()) throw InputError(at(where, name), "expected text");
    return f->get<std::string>();
}

long long integer(const Json& object, const char* name, const std::string& where,
                  long long lowest = std::numeric_limits<long long>::min()) {
    const Json* f = field(object, name);
    if (!f) return 0;
    if (!f->is_number_integer()) throw InputError(at(where, name), "expected an integer");
    const long long v = f->get<long long>();
    if (v < lowest)
        throw InputError(at(where, name), "expected at least " + std::to_string(lowest));
    return v;
}

int small_integer(const Json& object, const char* name, const std::string& where,
                  long long lowest = std::numeric_limits<int>::min()) {
    const long long v = integer(object, name, where, lowest);
    if (v > std::numeric_limits<int>::max()) throw InputError(at(where, name), "is out of range");
    return static_cast<int>(v);
}

std::uint64_t size(const Json& object, const char* name, const std::string& where) {
    const Json* f = field(object, name);
    if (!f) return 0;
    if (!f->is_number() || f->get<double>() < 0)
        throw InputError(at(where, name), "expected a non-negative number");
    return f->get<std::uint64_t>();
}

double number(const Json& object, const char* name, const std::string& where) {
    const Json* f = field(object, name);
    if (!f) return 0;
    if (!f->is_number()) throw InputError(at(where, name), "expected a number");
    return f->get<double>();
}

bool flag(const Json& object, const char* name, const std::string& where) {
    const Json* f = field(object, name);
    if (!f) return false;
    if (!f->is_boolean()) throw InputError(at(where, name), "expected true or false");
    return f->get<bool>();
}

// The elements of a list field, each with its "<where>.<name>[i]" for messages.
template <typename Fn>
void each(const Json& object, const char* name, const std::string& where, Fn&& fn) {
    const Json* f = field(object, name);
    if (!f) return;
    if (!f->is_array()) throw InputError(at(where, name), "expected a list");
    for (std::size_t i = 0; i < f->size(); ++i)
        fn((*f)[i], at(where, name) + "[" + std::to_string(i) + "]");
}

}  // namespace

// ---- GPUs -----------------------------------------------------------------------------------

Json GpuReport::to_json() const {
    Json gpus_json = Json::array();
    for (const auto& g : gpus) {
        Json mig_json = Json::array();
        for (const auto& m : g.mig)
            mig_json.push_back(
                {{"index", m.index}, {"name", m.name}, {"memory_total", m.memory_total}});
        gpus_json.push_back({{"index", g.index},
                             {"name", g.name},
                             {"uuid", g.uuid},
                             {"memory_total", g.memory_total},
                             {"memory_used", g.memory_used},
                             {"utilization", g.utilization},
                             {"temperature", g.temperature},
                             {"power_w", g.power_w},
                             {"processes", g.process_ids},
                             {"mig_enabled", g.mig_enabled},
                             {"mig", mig_json},
                             {"driver_model", g.driver_model}});
    }
    return {{"nvml", nvml},
            {"note", note},
            {"driver_version", driver_version},
            {"cuda_driver_version", cuda_driver_version},
            {"gpus", gpus_json}};
}

GpuReport GpuReport::from_json(const Json& json) {
    const std::string where = "gpus";
    expect_object(json, where);
    GpuReport r;
    r.nvml = flag(json, "nvml", where);
    r.note = text(json, "note", where);
    r.driver_version = text(json, "driver_version", where);
    r.cuda_driver_version = small_integer(json, "cuda_driver_version", where);
    // "gpus[1].memory_used": the list's elements are named after the report, not "gpus.gpus".
    const Json* list = field(json, "gpus");
    if (!list) return r;
    if (!list->is_array()) throw InputError("gpus.gpus", "expected a list");
    for (std::size_t i = 0; i < list->size(); ++i) {
        const std::string w = "gpus[" + std::to_string(i) + "]";
        const Json& g = (*list)[i];
        expect_object(g, w);
        GpuInfo info;
        info.index = small_integer(g, "index", w, 0);
        info.name = text(g, "name", w);
        info.uuid = text(g, "uuid", w);
        info.memory_total = size(g, "memory_total", w);
        info.memory_used = size(g, "memory_used", w);
        info.utilization = small_integer(g, "utilization", w);
        info.temperature = small_integer(g, "temperature", w);
        info.power_w = number(g, "power_w", w);
        each(g, "processes", w, [&](const Json& p, const std::string& pw) {
            if (!p.is_number_integer() || p.get<long long>() < 0 ||
                p.get<long long>() > std::numeric_limits<unsigned>::max())
                throw InputError(pw, "expected a process id");
            info.process_ids.push_back(p.get<unsigned>());
        });
        info.mig_enabled = flag(g, "mig_enabled", w);
        if (g.contains("driver_model")) info.driver_model = text(g, "driver_model", w);
        each(g, "mig", w, [&](const Json& m, const std::string& mw) {
            expect_object(m, mw);
            info.mig.push_back({small_integer(m, "index", mw, 0), text(m, "name", mw),
                                size(m, "memory_total", mw)});
        });
        r.gpus.push_back(std::move(info));
    }
    return r;
}

// ---- info -------------------------------------------------------------------------------

Json AgentInfo::to_json() const {
    return {{"version", version},
            {"protocol", protocol},
            {"min_protocol", min_protocol},
            {"tls", tls},
            {"tasks", tasks},
            {"gpus", gpus.to_json()},
            {"max_cpu_jobs", max_cpu_jobs},
            {"peers", peers}};
}

AgentInfo AgentInfo::from_json(const Json& json) {
    const std::string where = "info";
    expect_object(json, where);
    AgentInfo info;
    info.version = text(json, "version", where);
    info.protocol = small_integer(json, "protocol", where);
    info.min_protocol = small_integer(json, "min_protocol", where);
    info.tls = flag(json, "tls", where);
    if (const Json* t = field(json, "tasks")) {
        if (!t->is_array()) throw InputError("info.tasks", "expected a list of task schemas");
        info.tasks = *t;
    }
    if (const Json* g = field(json, "gpus")) info.gpus = GpuReport::from_json(*g);
    info.max_cpu_jobs = small_integer(json, "max_cpu_jobs", where, 0);
    if (const Json* p = field(json, "peers"); p && p->is_array() && p->size() > 64)
        throw InputError("info.peers", "at most 64 peers");
    each(json, "peers", "info", [&](const Json& e, const std::string& w) {
        if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>().size() > 64)
            throw InputError(w, "expected the name of one of the agent's peers");
        info.peers.push_back(e.get<std::string>());
    });
    return info;
}

// ---- jobs -----------------------------------------------------------------------------------

Json SubmitRequest::to_json() const {
    Json body = {{"task", task}, {"options", options}};
    if (!command.empty()) body["command"] = command;
    if (!name.empty()) body["name"] = name;
    if (priority != 0) body["priority"] = priority;
    if (gpus) body["gpus"] = *gpus;
    if (gpu.size() == 1) body["gpu"] = gpu.front();
    if (gpu.size() > 1) body["gpu"] = gpu;
    if (!run_id.empty()) body["run_id"] = run_id;
    if (!servers.empty()) {
        Json list = Json::array();
        for (const auto& s : servers) {
            Json e = {{"server", s.server}};
            if (s.gpus) e["gpus"] = *s.gpus;
            if (!s.gpu.empty()) e["gpu"] = s.gpu;
            list.push_back(e);
        }
        body["servers"] = list;
    }
    if (share) {
        body["share"] = share->to_json();
        body["part_of"] = part_of;
    }
    return body;
}

SubmitRequest SubmitRequest::from_json(const Json& body) {
    if (!body.is_object())
        throw InputError("body", "expected a JSON object {\"task\":..., \"options\":{...}}");
    SubmitRequest r;
    r.task = get_string(body, "task", "body");
    if (const Json* o = field(body, "options")) {
        if (!o->is_object()) throw InputError("options", "expected an object of task options");
        r.options = *o;
    }
    r.command = text(body, "command", "");
    if (r.command.size() > 64 ||
        r.command.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
        throw InputError("command", "expected the name of one of the task's commands (predict)");
    r.name = text(body, "name", "");
    if (r.name.size() > 200) throw InputError("name", "at most 200 characters");
    // Bounded, so one client cannot jump every queue for good with INT_MAX.
    r.priority = small_integer(body, "priority", "", -100);
    if (r.priority > 100) throw InputError("priority", "is at most 100 (and at least -100)");
    if (field(body, "gpus")) {
        const Json& g = body["gpus"];
        if (!g.is_number_integer() || g.get<long long>() < 0)
            throw InputError("gpus", "expected a non-negative integer");
        if (g.get<long long>() > 64) throw InputError("gpus", "at most 64 (one rank per GPU)");
        r.gpus = g.get<int>();
    }
    if (field(body, "gpu")) {
        const Json& g = body["gpu"];
        const auto index = [](const Json& v) {
            if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 1023)
                throw InputError("gpu",
                                 "expected the index of one of the agent's GPUs (0, 1, "
                                 "...) or a list of them ([0, 2])");
            return v.get<int>();
        };
        if (g.is_array()) {
            if (g.empty() || g.size() > 64)
                throw InputError("gpu", "a list of 1 to 64 GPU indices, one rank each");
            for (const auto& v : g) {
                const int i = index(v);
                if (std::find(r.gpu.begin(), r.gpu.end(), i) != r.gpu.end())
                    throw InputError("gpu", "lists GPU " + std::to_string(i) + " twice");
                r.gpu.push_back(i);
            }
        } else {
            r.gpu.push_back(index(g));
        }
        if (r.gpus && *r.gpus != static_cast<int>(r.gpu.size()))
            throw InputError("gpus", "is " + std::to_string(*r.gpus) + " but gpu lists " +
                                         std::to_string(r.gpu.size()) +
                                         " GPU(s): give one or the other");
        r.gpus = static_cast<int>(r.gpu.size());
    }
    // Checked against the mirror's rules by the agent (is_valid_run_id); here only its type.
    r.run_id = text(body, "run_id", "");
    each(body, "servers", "", [&](const Json& e, const std::string& w) {
        expect_object(e, w);
        ServerRanks s;
        s.server = get_string(e, "server", w);
        if (s.server.empty() || s.server.size() > 64)
            throw InputError(at(w, "server"), "expected the name of one of the agent's peers");
        if (field(e, "gpus")) s.gpus = small_integer(e, "gpus", w, 0);
        each(e, "gpu", w, [&](const Json& g, const std::string& gw) {
            if (!g.is_number_integer() || g.get<long long>() < 0 || g.get<long long>() > 1023)
                throw InputError(gw, "expected a GPU index");
            s.gpu.push_back(g.get<int>());
        });
        for (const auto& other : r.servers)
            if (other.server == s.server)
                throw InputError(w, "names server '" + s.server + "' twice");
        r.servers.push_back(std::move(s));
    });
    if (r.servers.size() > 64) throw InputError("servers", "at most 64 servers");
    if (const Json* s = field(body, "share")) {
        r.share = ServerShare::from_json(*s, "share");
        r.part_of = get_string(body, "part_of", "body");
        if (!r.servers.empty())
            throw InputError("servers", "a share of a run cannot name servers of its own");
    }
    return r;
}

JobInfo JobInfo::from_request(const SubmitRequest& request) {
    JobInfo job;
    job.task = request.task;
    job.command = request.command;
    job.options = request.options;
    job.name = request.name;
    job.priority = request.priority;
    job.gpus = request.gpus.value_or(0);
    job.requested_gpus = request.gpu;
    job.run_id = request.run_id;
    for (const auto& s : request.servers)
        job.parts.push_back({s.server, "", false});
    job.part_of = request.part_of;
    return job;
}

Json JobInfo::to_json() const {
    Json parts_json = Json::array();
    for (const auto& p : parts)
        parts_json.push_back({{"server", p.server}, {"job", p.job}, {"settled", p.settled}});
    return {{"id", id},           {"name", name},
            {"task", task},       {"command", command},
            {"options", options}, {"priority", priority},
            {"gpus", gpus},       {"state", job_state_name(state)},
            {"reason", reason},   {"submitted", submitted},
            {"started", started}, {"finished", finished},
            {"gpu_ids", gpu_ids}, {"requested_gpus", requested_gpus},
            {"pid", pid},         {"worker_started", worker_started},
            {"resume", resume},   {"submitted_by", submitted_by},
            {"run_id", run_id},   {"parts", parts_json},
            {"part_of", part_of}};
}

JobInfo JobInfo::from_json(const Json& j, const std::string& where) {
    expect_object(j, where);
    JobInfo r;
    r.id = get_string(j, "id", where);
    r.name = text(j, "name", where);
    r.task = text(j, "task", where);
    r.command = text(j, "command", where);
    if (const Json* o = field(j, "options")) {
        if (!o->is_object()) throw InputError(at(where, "options"), "expected an object");
        r.options = *o;
    }
    r.priority = small_integer(j, "priority", where);
    r.gpus = small_integer(j, "gpus", where, 0);
    r.state = parse_job_state(get_string(j, "state", where));
    r.reason = text(j, "reason", where);
    r.submitted = number(j, "submitted", where);
    r.started = number(j, "started", where);
    r.finished = number(j, "finished", where);
    each(j, "gpu_ids", where, [&](const Json& g, const std::string& w) {
        if (!g.is_number_integer()) throw InputError(w, "expected a GPU index");
        r.gpu_ids.push_back(g.get<int>());
    });
    each(j, "requested_gpus", where, [&](const Json& g, const std::string& w) {
        if (!g.is_number_integer()) throw InputError(w, "expected a GPU index");
        r.requested_gpus.push_back(g.get<int>());
    });
    // A job.json written before lists of GPUs: "requested_gpu", one index or null.
    if (const Json* old = field(j, "requested_gpu"); old && !old->is_null())
        r.requested_gpus = {small_integer(j, "requested_gpu", where, 0)};
    r.pid = static_cast<long>(integer(j, "pid", where));
    r.worker_started = text(j, "worker_started", where);
    r.resume = flag(j, "resume", where);
    r.submitted_by = text(j, "submitted_by", where);
    r.run_id = text(j, "run_id", where);
    each(j, "parts", where, [&](const Json& p, const std::string& w) {
        expect_object(p, w);
        r.parts.push_back({get_string(p, "server", w), text(p, "job", w), flag(p, "settled", w)});
    });
    r.part_of = text(j, "part_of", where);
    return r;
}

std::vector<JobInfo> jobs_from_json(const Json& json) {
    expect_object(json, "jobs");
    std::vector<JobInfo> out;
    each(json, "jobs", "",
         [&](const Json& j, const std::string& w) { out.push_back(JobInfo::from_json(j, w)); });
    return out;
}

Json events_to_json(const std::vector<Event>& events) {
    Json list = Json::array();
    for (const auto& e : events)
        list.push_back(event_to_json(e));
    return {{"events", list}};
}

std::vector<Event> events_from_json(const Json& json) {
    expect_object(json, "events");
    std::vector<Event> out;
    each(json, "events", "",
         [&](const Json& e, const std::string& w) { out.push_back(event_from_json(e, w)); });
    return out;
}

const char* job_action_name(JobAction action) {
    switch (action) {
        case JobAction::Cancel:
            return "cancel";
        case JobAction::Pause:
            return "pause";
        case JobAction::Resume:
            return "resume";
    }
    return "?";
}

std::optional<JobAction> parse_job_action(const std::string& name) {
    for (JobAction a : {JobAction::Cancel, JobAction::Pause, JobAction::Resume})
        if (name == job_action_name(a)) return a;
    return std::nullopt;
}

// ---- artifacts, folders, datasets ---------------------------------------------------------

Json artifacts_to_json(const std::vector<ArtifactEntry>& artifacts) {
    Json list = Json::array();
    for (const auto& a : artifacts)
        list.push_back({{"path", a.path}, {"size", a.size}});
    return {{"artifacts", list}};
}

std::vector<ArtifactEntry> artifacts_from_json(const Json& json) {
    expect_object(json, "artifacts");
    std::vector<ArtifactEntry> out;
    each(json, "artifacts", "", [&](const Json& a, const std::string& w) {
        expect_object(a, w);
        out.push_back({get_string(a, "path", w), size(a, "size", w)});
    });
    return out;
}

Json FolderListing::to_json() const {
    if (path.empty()) return {{"roots", roots}};
    Json list = Json::array();
    for (const auto& e : entries)
        list.push_back({{"name", e.name}, {"dir", e.dir}, {"size", e.size}});
    return {{"path", path}, {"entries", list}};
}

FolderListing FolderListing::from_json(const Json& json) {
    expect_object(json, "listing");
    FolderListing out;
    each(json, "roots", "", [&](const Json& r, const std::string& w) {
        if (!r.is_string()) throw InputError(w, "expected a folder path");
        out.roots.push_back(r.get<std::string>());
    });
    out.path = text(json, "path", "");
    each(json, "entries", "", [&](const Json& e, const std::string& w) {
        expect_object(e, w);
        out.entries.push_back({get_string(e, "name", w), flag(e, "dir", w), size(e, "size", w)});
    });
    return out;
}

Json DatasetSummary::to_json() const {
    return {{"id", id}, {"name", name}, {"files", files}};
}

DatasetSummary DatasetSummary::from_json(const Json& json, const std::string& where) {
    expect_object(json, where);
    return {get_string(json, "id", where), text(json, "name", where), size(json, "files", where)};
}

Json datasets_to_json(const std::vector<DatasetSummary>& datasets) {
    Json list = Json::array();
    for (const auto& d : datasets)
        list.push_back(d.to_json());
    return {{"datasets", list}};
}

std::vector<DatasetSummary> datasets_from_json(const Json& json) {
    expect_object(json, "datasets");
    std::vector<DatasetSummary> out;
    each(json, "datasets", "", [&](const Json& d, const std::string& w) {
        out.push_back(DatasetSummary::from_json(d, w));
    });
    return out;
}

}  // namespace crucible::net
