#include "core/base/event.h"

#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible {

bool is_known_event_kind(const std::string& kind) {
    static const std::set<std::string> kinds = {
        event_kind::kMetric, event_kind::kProgress,   event_kind::kEval,     event_kind::kStatus,
        event_kind::kLog,    event_kind::kCheckpoint, event_kind::kArtifact, event_kind::kSample,
        event_kind::kAlarm,  event_kind::kRollback};
    return kinds.count(kind) > 0;
}

std::int64_t Event::step() const {
    auto it = fields.find("step");
    if (it == fields.end() || !it->is_number_integer()) return -1;
    return it->get<std::int64_t>();
}

Json event_to_json(const Event& event) {
    Json j = Json::object();
    j["seq"] = event.seq;
    j["t"] = event.t;
    j["kind"] = event.kind;
    for (auto it = event.fields.begin(); it != event.fields.end(); ++it)
        j[it.key()] = it.value();
    return j;
}

Event event_from_json(const Json& json, const std::string& where) {
    if (!json.is_object()) throw InputError(where, "event must be a JSON object");
    Event e;
    const Json& seq = require_field(json, "seq", where);
    if (!seq.is_number_integer() || seq.get<std::int64_t>() < 0)
        throw InputError(where, "field 'seq': expected a non-negative integer");
    e.seq = seq.get<std::int64_t>();
    e.kind = get_string(json, "kind", where);
    if (!is_known_event_kind(e.kind))
        throw InputError(where, "field 'kind': unknown kind '" + e.kind + "'");
    if (auto it = json.find("t"); it != json.end()) {
        if (!it->is_number()) throw InputError(where, "field 't': expected number");
        e.t = it->get<double>();
    }
    for (auto it = json.begin(); it != json.end(); ++it) {
        if (it.key() == "seq" || it.key() == "t" || it.key() == "kind") continue;
        e.fields[it.key()] = it.value();
    }
    if (e.kind == event_kind::kRollback) {
        auto to = e.fields.find("to_step");
        if (to == e.fields.end() || !to->is_number_integer())
            throw InputError(where, "rollback event needs an integer 'to_step'");
    }
    return e;
}

std::string event_to_line(const Event& event) {
    return event_to_json(event).dump(-1, ' ', false, Json::error_handler_t::replace);
}

static Event make(const char* kind, Json fields) {
    Event e;
    e.kind = kind;
    e.fields = std::move(fields);
    return e;
}

Event make_metric(int epoch, std::int64_t step, const Json& values) {
    return make(event_kind::kMetric, {{"epoch", epoch}, {"step", step}, {"values", values}});
}

Event make_progress(std::int64_t step, std::int64_t total_steps, int epoch, int epochs,
                    double items_per_s, double eta_s) {
    return make(event_kind::kProgress, {{"step", step},
                                        {"total_steps", total_steps},
                                        {"epoch", epoch},
                                        {"epochs", epochs},
                                        {"items_per_s", items_per_s},
                                        {"eta_s", eta_s}});
}

Event make_eval(int epoch, std::int64_t step, const Json& values, const Json& per_class) {
    Json f = {{"epoch", epoch}, {"step", step}, {"values", values}};
    if (!per_class.is_null()) f["per_class"] = per_class;
    return make(event_kind::kEval, std::move(f));
}

Event make_status(const std::string& state, const std::string& reason) {
    Json f = {{"state", state}};
    if (!reason.empty()) f["reason"] = reason;
    return make(event_kind::kStatus, std::move(f));
}

Event make_log(const std::string& level, const std::string& message) {
    return make(event_kind::kLog, {{"level", level}, {"message", message}});
}

Event make_checkpoint(const std::string& name, std::int64_t step) {
    return make(event_kind::kCheckpoint, {{"name", name}, {"step", step}});
}

Event make_artifact(const std::string& name, const std::string& type) {
    return make(event_kind::kArtifact, {{"name", name}, {"type", type}});
}

Event make_sample(const Json& fields) {
    return make(event_kind::kSample, fields.is_object() ? fields : Json::object());
}

Event make_alarm(const std::string& alarm, const std::string& message) {
    return make(event_kind::kAlarm, {{"alarm", alarm}, {"message", message}});
}

Event make_rollback(std::int64_t to_step) {
    return make(event_kind::kRollback, {{"to_step", to_step}});
}

std::vector<Event> drop_superseded(const std::vector<Event>& events) {
    // Walk backwards: the smallest to_step of any later rollback bounds the steps that survive.
    std::vector<bool> keep(events.size(), true);
    std::int64_t bound = INT64_MAX;
    for (std::size_t i = events.size(); i-- > 0;) {
        const Event& e = events[i];
        if (e.kind == event_kind::kRollback) {
            bound = std::min<std::int64_t>(bound, e.fields.value("to_step", std::int64_t{0}));
            continue;
        }
        std::int64_t s = e.step();
        if (s >= 0 && s > bound) keep[i] = false;
    }
    std::vector<Event> out;
    out.reserve(events.size());
    for (std::size_t i = 0; i < events.size(); ++i)
        if (keep[i]) out.push_back(events[i]);
    return out;
}

double unix_time_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventLogWriter::EventLogWriter(std::filesystem::path path) : path_(std::move(path)) {
    std::error_code ec;
    if (std::filesystem::exists(path_, ec)) {
        std::string bytes = read_file_bytes(path_);
        // Cut a torn last line (no newline): the crash happened while it was written.
        std::size_t good = bytes.rfind('\n');
        good = (good == std::string::npos) ? 0 : good + 1;
        if (good != bytes.size()) std::filesystem::resize_file(path_, good);
        std::istringstream lines(bytes.substr(0, good));
        std::string line;
        while (std::getline(lines, line)) {
            if (line.empty()) continue;
            try {
                Json j = Json::parse(line);
                if (j.contains("seq") && j["seq"].is_number_integer())
                    next_seq_ = std::max(next_seq_, j["seq"].get<std::int64_t>() + 1);
            } catch (const Json::exception&) {
                // A damaged line in the middle: skip it, seq continues after the last good one.
            }
        }
    } else if (path_.has_parent_path()) {
        std::filesystem::create_directories(path_.parent_path());
    }
    out_.open(path_, std::ios::binary | std::ios::app);
    if (!out_) throw Error(path_to_utf8(path_) + ": cannot open event log for appending");
}

Event EventLogWriter::append(Event event) {
    std::lock_guard lock(mutex_);
    event.seq = next_seq_;
    if (event.t == 0) event.t = unix_time_now();
    std::string line = event_to_line(event);
    line += '\n';
    out_.write(line.data(), static_cast<std::streamsize>(line.size()));
    out_.flush();
    if (!out_) throw Error(path_to_utf8(path_) + ": cannot append event (disk full?)");
    ++next_seq_;
    return event;
}

std::int64_t EventLogWriter::next_seq() const {
    std::lock_guard lock(mutex_);
    return next_seq_;
}

std::vector<Event> read_event_log(const std::filesystem::path& path, std::int64_t after_seq) {
    std::vector<Event> out;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return out;
    std::string bytes = read_file_bytes(path);
    const std::string where = path_to_utf8(path);
    std::size_t pos = 0;
    int line_no = 0;
    while (pos < bytes.size()) {
        std::size_t nl = bytes.find('\n', pos);
        bool last = (nl == std::string::npos);
        std::string line = bytes.substr(pos, last ? std::string::npos : nl - pos);
        pos = last ? bytes.size() : nl + 1;
        ++line_no;
        if (line.empty()) continue;
        try {
            Event e = event_from_json(Json::parse(line), where + ":" + std::to_string(line_no));
            if (e.seq > after_seq) out.push_back(std::move(e));
        } catch (const std::exception& err) {
            if (last) break;  // torn final line from a crashed writer
            throw InputError(where + ":" + std::to_string(line_no), err.what());
        }
    }
    return out;
}

}  // namespace crucible
