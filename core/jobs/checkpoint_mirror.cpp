#include "core/jobs/checkpoint_mirror.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/secret_store.h"
#include "core/base/sha256.h"

namespace crucible::jobs {

namespace {

std::string megabytes(std::uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
    return buf;
}

long long mtime_of(const std::filesystem::path& file) {
    std::error_code ec;
    return static_cast<long long>(
        std::filesystem::last_write_time(file, ec).time_since_epoch().count());
}

std::string trim_slashes(std::string s) {
    while (!s.empty() && s.front() == '/')
        s.erase(s.begin());
    while (!s.empty() && s.back() == '/')
        s.pop_back();
    return s;
}

// A job folder's name for its checkpoints/ and artifacts/ folders, as they appear in keys.
std::string folder_name(const std::filesystem::path& p) {
    return path_to_generic_utf8(p.filename());
}

}  // namespace

// ---- configuration ---------------------------------------------------------------------------

Json MirrorConfig::to_json() const {
    Json j = {{"endpoint", endpoint},
              {"bucket", bucket},
              {"region", region},
              {"prefix", prefix},
              {"max_mbps", max_mbps},
              {"keep", keep},
              {"part_size_mb", part_size >> 20}};
    if (path_style) j["path_style"] = *path_style;
    if (!ca_file.empty()) j["ca_file"] = ca_file;
    if (poll != std::chrono::milliseconds(1000)) j["poll_ms"] = poll.count();
    return j;
}

MirrorConfig MirrorConfig::from_json(const Json& j, const std::string& where) {
    if (!j.is_object())
        throw InputError(where, "expected an object {\"endpoint\":..., \"bucket\":...}");
    MirrorConfig c;
    c.endpoint = get_string(j, "endpoint", where);
    c.bucket = get_string(j, "bucket", where);
    if (j.contains("region")) c.region = get_string(j, "region", where);
    if (j.contains("prefix")) c.prefix = trim_slashes(get_string(j, "prefix", where));
    if (j.contains("path_style")) {
        if (!j["path_style"].is_boolean())
            throw InputError(where + ".path_style", "expected true or false");
        c.path_style = j["path_style"].get<bool>();
    }
    if (j.contains("max_mbps")) c.max_mbps = get_number(j, "max_mbps", where);
    if (j.contains("keep")) c.keep = static_cast<int>(get_integer(j, "keep", where));
    if (j.contains("part_size_mb"))
        c.part_size = static_cast<std::uint64_t>(get_integer(j, "part_size_mb", where)) << 20;
    if (j.contains("ca_file")) c.ca_file = get_string(j, "ca_file", where);
    if (j.contains("poll_ms")) c.poll = std::chrono::milliseconds(get_integer(j, "poll_ms", where));
    if (c.endpoint.rfind("http://", 0) != 0 && c.endpoint.rfind("https://", 0) != 0)
        throw InputError(where + ".endpoint",
                         "'" + c.endpoint + "': expected http(s)://HOST[:PORT]");
    if (c.bucket.empty()) throw InputError(where + ".bucket", "name the bucket");
    if (!(c.max_mbps >= 0) || !std::isfinite(c.max_mbps))
        throw InputError(where + ".max_mbps", "expected megabits per second, 0 for no cap");
    if (c.keep < 1 || c.keep > 1000) throw InputError(where + ".keep", "expected 1 to 1000");
    if (c.part_size < (5ull << 20) || c.part_size > (5ull << 30))
        throw InputError(where + ".part_size_mb", "S3 parts are 5 MiB to 5 GiB");
    if (c.poll.count() < 10) throw InputError(where + ".poll_ms", "at least 10");
    for (char ch : c.prefix)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '/' &&
            ch != '.')
            throw InputError(where + ".prefix", "letters, digits, '-', '_', '.' and '/' only");
    return c;
}

bool is_valid_run_id(const std::string& id) {
    if (id.empty() || id.size() > 64) return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    });
}

std::string mirror_run_prefix(const MirrorConfig& config, const std::string& run_id) {
    return (config.prefix.empty() ? "" : config.prefix + "/") + run_id + "/";
}

// ---- per-job state (JobFolder::mirror_state)
// --------------------------------------------------------

struct CheckpointMirror::JobState {
    struct File {
        std::uint64_t size = 0;
        long long mtime = 0;
        std::string sha256;
    };
    bool restored = false;
    bool finished = false;              // the job ended and all of it is in the bucket
    std::map<std::string, File> files;  // relative path -> what the bucket holds
    // The upload under way: the file (as it was when it began) and its parts.
    std::string upload_file;
    File upload_of;
    net::MultipartProgress upload;

    Json to_json() const {
        Json list = Json::object();
        for (const auto& [rel, f] : files)
            list[rel] = {{"size", f.size}, {"mtime", f.mtime}, {"sha256", f.sha256}};
        Json j = {{"restored", restored}, {"finished", finished}, {"files", list}};
        if (!upload_file.empty())
            j["upload"] = {{"file", upload_file},
                           {"size", upload_of.size},
                           {"mtime", upload_of.mtime},
                           {"sha256", upload_of.sha256},
                           {"progress", upload.to_json()}};
        return j;
    }
};

CheckpointMirror::JobState CheckpointMirror::load(const JobInfo& job) const {
    JobState s;
    const auto file = JobFolder{registry_.folder(job.id)}.mirror_state();
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return s;
    try {
        const Json j = read_json_file(file);
        const std::string where = path_to_utf8(file);
        s.restored = j.value("restored", false);
        s.finished = j.value("finished", false);
        const Json files = j.value("files", Json::object());  // items() must not outlive it
        for (const auto& [rel, f] : files.items())
            s.files[rel] = {static_cast<std::uint64_t>(get_integer(f, "size", where)),
                            get_integer(f, "mtime", where), get_string(f, "sha256", where)};
        if (j.contains("upload")) {
            const Json& u = j["upload"];
            s.upload_file = get_string(u, "file", where);
            s.upload_of = {static_cast<std::uint64_t>(get_integer(u, "size", where)),
                           get_integer(u, "mtime", where), get_string(u, "sha256", where)};
            s.upload = net::MultipartProgress::from_json(u.value("progress", Json()), where);
        }
    } catch (const std::exception& e) {
        // Unreadable bookkeeping costs uploads again, never the job.
        spdlog::warn("job {}: mirror state unreadable ({}); uploading again", job.id, e.what());
        s = {};
        s.restored = true;
    }
    return s;
}

void CheckpointMirror::save(const JobInfo& job, const JobState& state) const {
    write_json_file(JobFolder{registry_.folder(job.id)}.mirror_state(), state.to_json());
}

// ---- the mirror ------------------------------------------------------------------------------

CheckpointMirror::CheckpointMirror(MirrorConfig config, const std::filesystem::path& data_dir,
                                   JobRegistry& registry)
    : config_(std::move(config)), registry_(registry) {
    if (!config_.configured()) return;
    auto secrets = SecretStore::open_file(agent_secrets_file(data_dir));
    const auto key = secrets->get(kMirrorAccessKeySecret);
    const auto secret = secrets->get(kMirrorSecretKeySecret);
    if (!key || !secret) {
        spdlog::error(
            "checkpoint mirror: agent.json names s3://{} but the agent's secret store has no "
            "credentials for it; set them with crucible agent mirror set (jobs with a run id are "
            "refused meanwhile)",
            config_.bucket);
        return;
    }
    net::S3Options options;
    options.part_size = config_.part_size;
    options.max_upload_bytes_per_s = static_cast<std::uint64_t>(config_.max_mbps * 125000.0);
    options.ca_file = config_.ca_file;
    client_ = std::make_unique<net::S3Client>(
        net::S3Location{config_.endpoint, config_.bucket, config_.region, config_.path_style},
        net::S3Credentials{*key, *secret}, options);
}

CheckpointMirror::~CheckpointMirror() {
    stop();
}

std::string CheckpointMirror::check_submit(const std::string& run_id) const {
    if (!is_valid_run_id(run_id))
        throw InputError("run_id", "1 to 64 letters, digits, '-' and '_'");
    if (!enabled())
        throw InputError("run_id",
                         config_.configured()
                             ? "this agent's checkpoint mirror has no credentials (crucible agent "
                               "mirror set on the GPU machine)"
                             : "this agent has no checkpoint mirror to keep a run in (crucible "
                               "agent mirror set on the GPU machine)");
    for (const auto& j : registry_.list())
        if (j.run_id == run_id && !is_final_state(j.state))
            return "job " + j.id + " already runs as '" + run_id +
                   "' here; one job at a time writes a run's checkpoints";
    return "";
}

bool CheckpointMirror::may_start(const JobInfo& job) {
    if (job.run_id.empty() || !enabled()) return true;
    bool first_ask = false;
    {
        std::lock_guard lock(mutex_);
        if (restored_.count(job.id)) return true;
        first_ask = waiting_.insert(job.id).second;
    }
    if (!load(job).restored) {
        if (first_ask) wake();  // a new job: its restore need not wait for the next poll
        return false;
    }
    std::lock_guard lock(mutex_);
    restored_.insert(job.id);
    return true;
}

void CheckpointMirror::start(std::function<void()> wake_scheduler,
                             std::function<void(const std::string&, const Event&)> raise_event) {
    if (!enabled()) return;
    wake_scheduler_ = std::move(wake_scheduler);
    raise_event_ = std::move(raise_event);
    {
        std::lock_guard lock(mutex_);
        running_ = true;
    }
    spdlog::info("checkpoint mirror: runs go to {}{} ({})", client_->describe(""),
                 config_.prefix.empty() ? "" : config_.prefix + "/", config_.endpoint);
    thread_ = std::thread([this] { loop(); });
}

void CheckpointMirror::stop() {
    {
        std::lock_guard lock(mutex_);
        running_ = false;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void CheckpointMirror::wake() {
    {
        std::lock_guard lock(mutex_);
        woken_ = true;
    }
    cv_.notify_all();
}

bool CheckpointMirror::interrupted() const {
    std::lock_guard lock(mutex_);
    return !running_;
}

void CheckpointMirror::note(const JobInfo& job, const std::string& level,
                            const std::string& message) {
    if (level == "warning")
        spdlog::warn("job {}: {}", job.id, message);
    else
        spdlog::info("job {}: {}", job.id, message);
    if (raise_event_) raise_event_(job.id, make_log(level, message));
}

void CheckpointMirror::loop() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            cv_.wait_for(lock, config_.poll, [this] { return woken_ || !running_; });
            woken_ = false;
            if (!running_) return;
        }
        const auto now = std::chrono::steady_clock::now();
        std::vector<JobInfo> jobs;
        for (auto& j : registry_.list())
            if (!j.run_id.empty()) jobs.push_back(std::move(j));
        // Restores first: a job waits on them to start.
        for (const auto& job : jobs) {
            if (interrupted()) return;
            {
                std::lock_guard lock(mutex_);
                if (restored_.count(job.id) || (retry_at_.count(job.id) && now < retry_at_[job.id]))
                    continue;
            }
            if (load(job).restored) {
                std::lock_guard lock(mutex_);
                restored_.insert(job.id);
                continue;
            }
            if (!is_final_state(job.state)) restore(job);
        }
        for (const auto& job : jobs) {
            if (interrupted()) return;
            {
                std::lock_guard lock(mutex_);
                if (!restored_.count(job.id) || finished_.count(job.id) ||
                    (retry_at_.count(job.id) && now < retry_at_[job.id]))
                    continue;
            }
            try {
                sync(job);
                std::lock_guard lock(mutex_);
                retry_at_.erase(job.id);
            } catch (const std::exception& e) {
                spdlog::warn("job {}: checkpoint mirror: {} (trying again in 30 s)", job.id,
                             e.what());
                std::lock_guard lock(mutex_);
                retry_at_[job.id] = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            }
        }
    }
}

void CheckpointMirror::restore(const JobInfo& job) {
    const auto dir = registry_.folder(job.id);
    const JobFolder folder{dir};
    const std::string run = mirror_run_prefix(config_, job.run_id);
    JobState state = load(job);
    try {
        const auto t0 = std::chrono::steady_clock::now();
        // Newest step first; a checkpoint whose bytes do not hash to its recorded SHA-256 is
        // passed over for the one before it.
        std::vector<std::pair<std::int64_t, net::S3Object>> steps;
        for (auto& o : client_->list(run + folder_name(folder.checkpoints()) + "/")) {
            const auto name = o.key.substr(o.key.rfind('/') + 1);
            if (auto step = JobFolder::step_of_checkpoint(name)) steps.emplace_back(*step, o);
        }
        std::sort(steps.begin(), steps.end(),
                  [](const auto& a, const auto& b) { return a.first > b.first; });
        auto fetch = [&](const std::string& key, const std::filesystem::path& target) {
            std::filesystem::path temp = target;
            temp += ".mirror.tmp";  // a temp name (JobFolder::is_bookkeeping) until it is whole
            std::filesystem::create_directories(target.parent_path());
            std::string sha;
            auto meta = client_->get_object_to_file(key, temp, &sha);
            const auto recorded = meta.find("sha256");
            if (recorded == meta.end() || recorded->second != sha) {
                std::error_code ec;
                std::filesystem::remove(temp, ec);
                return std::string();
            }
            platform::replace_file(temp, target);
            return sha;
        };
        auto remember = [&](const std::filesystem::path& file, const std::string& sha) {
            std::error_code ec;
            state.files[path_to_generic_utf8(file.lexically_relative(dir))] = {
                std::filesystem::file_size(file, ec), mtime_of(file), sha};
        };
        std::optional<std::int64_t> resumed;
        std::uint64_t bytes = 0;
        for (const auto& [step, object] : steps) {
            const auto target = folder.checkpoints() / object.key.substr(object.key.rfind('/') + 1);
            const std::string sha = fetch(object.key, target);
            if (sha.empty()) {
                // Useless to every later restore, and it would hold a place of the `keep`.
                note(job, "warning",
                     "mirror: " + client_->describe(object.key) +
                         " does not match its SHA-256; deleted, trying the checkpoint before it");
                try {
                    client_->delete_object(object.key);
                } catch (const std::exception& e) {
                    spdlog::warn("job {}: mirror: {}", job.id, e.what());
                }
                continue;
            }
            remember(target, sha);
            resumed = step;
            bytes += object.size;
            break;
        }
        int artifacts = 0;
        if (resumed) {
            for (const auto& o : client_->list(run + folder_name(folder.artifacts()) + "/")) {
                std::filesystem::path target;
                try {
                    target = dir / path_from_utf8(o.key.substr(run.size()));
                } catch (const InputError&) {
                    continue;  // not a name this agent wrote
                }
                if (!is_path_inside(folder.artifacts(), target)) continue;
                const std::string sha = fetch(o.key, target);
                if (sha.empty()) {
                    note(job, "warning",
                         "mirror: " + client_->describe(o.key) +
                             " does not match its SHA-256; left out");
                    continue;
                }
                remember(target, sha);
                bytes += o.size;
                ++artifacts;
            }
        }
        state.restored = true;
        save(job, state);
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (resumed) {
            registry_.update(job.id, [](JobInfo& j) {
                j.resume = true;
                j.reason.clear();
            });
            char timing[64];
            std::snprintf(timing, sizeof timing, "%.1f s", secs);
            note(job, "info",
                 "mirror: run '" + job.run_id + "' goes on from step " + std::to_string(*resumed) +
                     ": its checkpoint and " + std::to_string(artifacts) +
                     " artifact files came back from " + client_->describe(run) + " (" +
                     megabytes(bytes) + " in " + timing + ")");
        } else {
            registry_.update(job.id, [](JobInfo& j) { j.reason.clear(); });
            note(job, "info",
                 "mirror: run '" + job.run_id + "' has no intact checkpoint in " +
                     client_->describe(run) + " yet; it starts from the beginning");
        }
        {
            std::lock_guard lock(mutex_);
            restored_.insert(job.id);
            retry_at_.erase(job.id);
        }
        if (wake_scheduler_) wake_scheduler_();
    } catch (const std::exception& e) {
        // The job waits: starting afresh would throw the mirrored progress away.
        const std::string why = std::string("waiting for the checkpoint mirror: ") + e.what();
        spdlog::warn("job {}: {} (trying again in 10 s)", job.id, why);
        registry_.update(job.id, [&](JobInfo& j) { j.reason = why; });
        std::lock_guard lock(mutex_);
        retry_at_[job.id] = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
}

CheckpointMirror::Sent CheckpointMirror::upload(const JobInfo& job, JobState& state,
                                                const std::filesystem::path& relative) {
    const auto file = registry_.folder(job.id) / relative;
    const std::string rel = path_to_generic_utf8(relative);
    std::error_code ec;
    const JobState::File now{std::filesystem::file_size(file, ec), mtime_of(file), ""};
    if (ec) return Sent::Nothing;  // gone (a checkpoint the worker rotated out)
    if (auto it = state.files.find(rel);
        it != state.files.end() && it->second.size == now.size && it->second.mtime == now.mtime)
        return Sent::Nothing;
    JobState::File of = now;
    try {
        of.sha256 = sha256_file(file);
    } catch (const InputError&) {
        if (!std::filesystem::exists(file, ec)) return Sent::Nothing;  // rotated out meanwhile
        throw;
    }
    const std::string key = mirror_run_prefix(config_, job.run_id) + rel;
    if (state.upload_file != rel || state.upload_of.size != of.size ||
        state.upload_of.sha256 != of.sha256) {
        if (!state.upload.upload_id.empty()) {  // another file's, or this one before it changed
            try {
                client_->abort_multipart(mirror_run_prefix(config_, job.run_id) + state.upload_file,
                                         state.upload.upload_id);
            } catch (const std::exception& e) {
                spdlog::warn("job {}: mirror: abort of an old upload: {}", job.id, e.what());
            }
        }
        state.upload = {};
    }
    state.upload_file = rel;
    state.upload_of = of;
    const auto t0 = std::chrono::steady_clock::now();
    net::UploadOutcome outcome;
    try {
        outcome = client_->upload_file(
            key, file, {{"sha256", of.sha256}}, state.upload, [&] { save(job, state); },
            [&] { return interrupted(); });
    } catch (const InputError&) {
        if (std::filesystem::exists(file, ec)) throw;
        // The worker rotated the checkpoint out before it could be read: a newer one follows.
        if (!state.upload.upload_id.empty()) client_->abort_multipart(key, state.upload.upload_id);
        state.upload_file.clear();
        state.upload = {};
        save(job, state);
        return Sent::Nothing;
    }
    if (!outcome.complete) {
        save(job, state);
        return Sent::Stopped;
    }
    state.upload_file.clear();
    state.upload = {};
    // A file rewritten while it went up is sent again next time.
    if (std::filesystem::file_size(file, ec) == of.size && mtime_of(file) == of.mtime)
        state.files[rel] = of;
    save(job, state);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spdlog::info("job {}: mirror: {} -> {} ({} sent in {:.2f} s, {:.1f} MB/s)", job.id, rel,
                 client_->describe(key), megabytes(outcome.bytes_sent), secs,
                 secs > 0 ? static_cast<double>(outcome.bytes_sent) / 1e6 / secs : 0.0);
    return Sent::File;
}

void CheckpointMirror::prune(const JobInfo& job, JobState& state) {
    const std::string run = mirror_run_prefix(config_, job.run_id);
    std::vector<std::pair<std::int64_t, std::string>> steps;
    for (const auto& o : client_->list(run + folder_name(JobFolder{""}.checkpoints()) + "/"))
        if (auto step = JobFolder::step_of_checkpoint(o.key.substr(o.key.rfind('/') + 1)))
            steps.emplace_back(*step, o.key);
    std::sort(steps.begin(), steps.end(), std::greater<>());
    for (std::size_t i = static_cast<std::size_t>(config_.keep); i < steps.size(); ++i) {
        client_->delete_object(steps[i].second);
        state.files.erase(steps[i].second.substr(run.size()));
    }
}

void CheckpointMirror::sync(const JobInfo& job) {
    const auto dir = registry_.folder(job.id);
    const JobFolder folder{dir};
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return;  // deleted meanwhile
    JobState state = load(job);
    if (state.finished) {
        std::lock_guard lock(mutex_);
        finished_.insert(job.id);
        return;
    }
    // Whether the job has ended, read before its folder is: an ended job's last checkpoint is
    // then surely among the files seen below.
    const auto latest = registry_.get(job.id);
    const bool ended = latest && is_final_state(latest->state);
    // The newest `keep` step checkpoints, newest first: after a pause the newest matters most.
    std::vector<std::pair<std::int64_t, std::filesystem::path>> steps;
    for (const auto& e : std::filesystem::directory_iterator(folder.checkpoints(), ec))
        if (auto step = JobFolder::step_of_checkpoint(path_to_utf8(e.path().filename())))
            steps.emplace_back(*step, e.path().lexically_relative(dir));
    std::sort(steps.begin(), steps.end(), std::greater<>());
    if (steps.size() > static_cast<std::size_t>(config_.keep))
        steps.resize(static_cast<std::size_t>(config_.keep));
    bool uploaded = false;
    for (const auto& [step, rel] : steps) {
        const Sent sent = upload(job, state, rel);
        if (sent == Sent::Stopped) return;
        uploaded = uploaded || sent == Sent::File;
    }
    if (uploaded) prune(job, state);
    if (!uploaded && !ended) return;
    // Artifacts go with each new checkpoint (so best weights outlive the machine too), the
    // results table once the job has ended.
    std::vector<std::filesystem::path> files;
    for (auto it = std::filesystem::recursive_directory_iterator(folder.artifacts(), ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const auto rel = it->path().lexically_relative(dir);
        if (it->is_regular_file() && !JobFolder::is_bookkeeping(rel)) files.push_back(rel);
    }
    if (ended && std::filesystem::exists(folder.results_csv(), ec))
        files.push_back(folder.results_csv().lexically_relative(dir));
    for (const auto& rel : files)
        if (upload(job, state, rel) == Sent::Stopped) return;
    if (ended) {
        state.finished = true;
        save(job, state);
        {
            std::lock_guard lock(mutex_);
            finished_.insert(job.id);
        }
        spdlog::info("job {}: mirror: run '{}' is complete in {}", job.id, job.run_id,
                     client_->describe(mirror_run_prefix(config_, job.run_id)));
    }
}

}  // namespace crucible::jobs
