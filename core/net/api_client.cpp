#include "core/net/api_client.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fstream>
#include <future>
#include <regex>
#include <set>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/base/stored_dataset.h"
#include "core/net/api_version.h"
#include "core/net/tls.h"

namespace crucible::net {
namespace {

// OpenSSL certificate check that accepts exactly the pinned fingerprint (or, when probing,
// any certificate while recording its fingerprint).
struct PinState {
    std::string expected;  // empty = probe mode
    std::string seen;
};

int verify_pinned(X509_STORE_CTX* ctx, void* arg) {
    auto* state = static_cast<PinState*>(arg);
    X509* cert = X509_STORE_CTX_get0_cert(ctx);
    if (!cert) return 0;
    state->seen = certificate_fingerprint_x509(cert);
    if (state->expected.empty()) return 1;
    return state->seen == state->expected ? 1 : 0;
}

}  // namespace

ParsedUrl parse_url(const std::string& url) {
    static const std::regex re(R"(^(https?)://([^/:\[\]]+|\[[0-9a-fA-F:]+\])(?::(\d{1,5}))?/?$)");
    std::smatch m;
    if (!std::regex_match(url, m, re))
        throw InputError(
            "url", "'" + url +
                       "' is not an agent address like https://gpu1:7443 or http://127.0.0.1:7443");
    ParsedUrl p;
    p.https = m[1] == "https";
    p.host = m[2];
    p.port = m[3].matched ? std::stoi(m[3]) : (p.https ? 443 : 80);
    if (p.port <= 0 || p.port > 65535) throw InputError("url", "port out of range");
    return p;
}

ApiClient::ApiClient(RemoteEndpoint endpoint)
    : endpoint_(std::move(endpoint)), url_(parse_url(endpoint_.url)) {
    if (url_.https && endpoint_.fingerprint.empty())
        throw InputError(
            "fingerprint",
            "no pinned certificate for " + endpoint_.url +
                "; add the agent with 'crucible remote add' to confirm its fingerprint");
}

ApiClient::~ApiClient() = default;

static thread_local PinState t_pin;  // one connection per thread at a time

namespace {

// Every connection of this process while it lives, so stop_all_requests() can end them. Never
// destroyed: a background thread may still close a connection while the process exits.
struct LiveConnections {
    std::mutex mutex;
    std::set<httplib::ClientImpl*> connections;
    std::atomic<bool> stopping{false};
};

LiveConnections& live_connections() {
    static auto* live = new LiveConnections;
    return *live;
}

}  // namespace

void ApiClient::Unregister::operator()(httplib::ClientImpl* client) const {
    {
        LiveConnections& live = live_connections();
        std::lock_guard<std::mutex> lock(live.mutex);  // waits for a stop() under way on it
        live.connections.erase(client);
    }
    delete client;
}

void ApiClient::stop_all_requests() {
    if (live_connections().stopping.exchange(true)) return;
    // ClientImpl::stop() shuts a connection's socket down; it waits while the connection is
    // being made, and does nothing to a call whose socket is not open yet. So a thread of its
    // own repeats it every 50 ms until no connection is left (new ones are refused meanwhile).
    std::thread([] {
        LiveConnections& live = live_connections();
        while (live.stopping.load()) {
            {
                std::lock_guard<std::mutex> lock(live.mutex);
                if (live.connections.empty()) return;
                for (httplib::ClientImpl* client : live.connections)
                    client->stop();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }).detach();
}

void ApiClient::allow_requests() {
    live_connections().stopping = false;
}

bool ApiClient::requests_stopped() {
    return live_connections().stopping.load();
}

ApiClient::Connection ApiClient::connect(std::chrono::seconds read_timeout) const {
    if (requests_stopped())
        throw ApiError(ApiErrorKind::Unreachable,
                       "not calling " + endpoint_.url + ": this program is closing");
    std::unique_ptr<httplib::ClientImpl> cli;
    if (url_.https) {
        auto ssl = std::make_unique<httplib::SSLClient>(url_.host, url_.port);
        ssl->enable_server_certificate_verification(false);  // we pin instead of trusting CAs
        t_pin.expected = normalize_fingerprint(endpoint_.fingerprint);
        SSL_CTX_set_verify(ssl->ssl_context(), SSL_VERIFY_PEER, nullptr);
        SSL_CTX_set_cert_verify_callback(ssl->ssl_context(), verify_pinned, &t_pin);
        cli = std::move(ssl);
    } else {
        cli = std::make_unique<httplib::ClientImpl>(url_.host, url_.port);
    }
    // Nagle's algorithm holds back the tail of each request body until the previous segment is
    // acknowledged; with delayed ACKs that is up to 40 ms per request (curl turns it off too).
    cli->set_tcp_nodelay(true);
    cli->set_connection_timeout(10, 0);
    cli->set_read_timeout(read_timeout.count(), 0);
    cli->set_write_timeout(60, 0);
    httplib::Headers headers{{kVersionHeader, std::to_string(kProtocolVersion)}};
    if (!endpoint_.token.empty()) headers.emplace("Authorization", "Bearer " + endpoint_.token);
    cli->set_default_headers(headers);
    LiveConnections& live = live_connections();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.connections.insert(cli.get());
    return Connection(cli.release());
}

std::string ApiClient::probe_fingerprint(const std::string& url) {
    ParsedUrl p = parse_url(url);
    if (!p.https) return "";
    httplib::SSLClient ssl(p.host, p.port);
    ssl.enable_server_certificate_verification(false);
    PinState state;
    SSL_CTX_set_verify(ssl.ssl_context(), SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_cert_verify_callback(ssl.ssl_context(), verify_pinned, &state);
    ssl.set_connection_timeout(10, 0);
    auto res = ssl.Get(std::string(routes::kHealth.pattern));
    if (state.seen.empty())
        throw Error("cannot reach " + url + ": " +
                    (res ? "no certificate" : httplib::to_string(res.error())));
    return state.seen;
}

const char* api_error_kind_name(ApiErrorKind kind) {
    switch (kind) {
        case ApiErrorKind::Unreachable:
            return "unreachable";
        case ApiErrorKind::CertificateMismatch:
            return "certificate_mismatch";
        case ApiErrorKind::BadRequest:
            return "bad_request";
        case ApiErrorKind::Unauthorized:
            return "unauthorized";
        case ApiErrorKind::Forbidden:
            return "forbidden";
        case ApiErrorKind::NotFound:
            return "not_found";
        case ApiErrorKind::Conflict:
            return "conflict";
        case ApiErrorKind::TooLarge:
            return "too_large";
        case ApiErrorKind::RateLimited:
            return "rate_limited";
        case ApiErrorKind::Incompatible:
            return "incompatible";
        case ApiErrorKind::Server:
            return "server";
    }
    return "?";
}

ApiErrorKind api_error_kind_for_status(int status) {
    switch (status) {
        case 0:
            return ApiErrorKind::Unreachable;
        case 400:
        case 415:
        case 422:
            return ApiErrorKind::BadRequest;
        case 401:
            return ApiErrorKind::Unauthorized;
        case 403:
            return ApiErrorKind::Forbidden;
        case 404:
            return ApiErrorKind::NotFound;
        case 409:
            return ApiErrorKind::Conflict;
        case 413:
            return ApiErrorKind::TooLarge;
        case 426:
            return ApiErrorKind::Incompatible;
        case 429:
            return ApiErrorKind::RateLimited;
        default:
            return ApiErrorKind::Server;
    }
}

Json ApiClient::check(int status, const std::string& body, const std::string& what) const {
    Json j;
    try {
        j = body.empty() ? Json::object() : parse_json(body, what);
    } catch (const InputError&) {
        j = Json{{"raw", body}};
    }
    if (status >= 400) {
        std::string msg = body, code;
        if (j.is_object() && j.contains("error") && j["error"].is_object()) {
            msg = j["error"].value("message", body);
            code = j["error"].value("code", std::string());
        }
        throw ApiError(status, what + ": " + msg + " (HTTP " + std::to_string(status) + ")", code);
    }
    return j;
}

namespace {

ApiError failure(const httplib::Result& res, const std::string& url,
                 const std::string& detail = {}) {
    if (res.error() == httplib::Error::SSLServerVerification ||
        res.error() == httplib::Error::SSLConnection)
        return ApiError(ApiErrorKind::CertificateMismatch,
                        "TLS handshake with " + url +
                            " failed: the agent's certificate does not match the pinned "
                            "fingerprint (or TLS is broken). If the agent's certificate was "
                            "changed on purpose, remove and re-add the remote.");
    return ApiError(ApiErrorKind::Unreachable,
                    "cannot reach " + url + ": " + httplib::to_string(res.error()) + detail);
}

}  // namespace

Json ApiClient::get(const std::string& path) {
    auto cli = connect(std::chrono::seconds(60));
    auto res = cli->Get(path);
    if (!res) throw failure(res, endpoint_.url);
    return check(res->status, res->body, "GET " + path);
}

Json ApiClient::get(const std::string& path, const std::multimap<std::string, std::string>& query) {
    auto cli = connect(std::chrono::seconds(60));
    const httplib::Params params(query.begin(), query.end());
    auto res = cli->Get(path, params, httplib::Headers{});
    if (!res) throw failure(res, endpoint_.url);
    return check(res->status, res->body, "GET " + path);
}

Json ApiClient::post(const std::string& path, const Json& body) {
    auto cli = connect(std::chrono::seconds(60));
    auto res = cli->Post(path, body.dump(), "application/json");
    if (!res) throw failure(res, endpoint_.url);
    return check(res->status, res->body, "POST " + path);
}

Json ApiClient::del(const std::string& path) {
    auto cli = connect(std::chrono::seconds(60));
    auto res = cli->Delete(path);
    if (!res) throw failure(res, endpoint_.url);
    return check(res->status, res->body, "DELETE " + path);
}

void ApiClient::health() {
    get(routes::kHealth.path());
}

AgentInfo ApiClient::info() {
    return AgentInfo::from_json(get(routes::kInfo.path()));
}

GpuReport ApiClient::gpus() {
    return GpuReport::from_json(get(routes::kGpus.path()));
}

JobInfo ApiClient::submit(const SubmitRequest& request) {
    return JobInfo::from_json(post(routes::kSubmitJob.path(), request.to_json()), "submitted job");
}

std::vector<JobInfo> ApiClient::jobs() {
    return jobs_from_json(get(routes::kListJobs.path()));
}

JobInfo ApiClient::job(const std::string& job_id) {
    return JobInfo::from_json(get(routes::kGetJob.path({job_id})), "job " + job_id);
}

void ApiClient::control(const std::string& job_id, JobAction action) {
    const Route& route = action == JobAction::Cancel  ? routes::kCancelJob
                         : action == JobAction::Pause ? routes::kPauseJob
                                                      : routes::kResumeJob;
    post(route.path({job_id}), Json::object());
}

void ApiClient::delete_job(const std::string& job_id) {
    del(routes::kDeleteJob.path({job_id}));
}

std::vector<Event> ApiClient::events(const std::string& job_id, std::int64_t after_seq) {
    return events_from_json(get(routes::kJobEvents.path({job_id}),
                                {{"format", "json"}, {"after", std::to_string(after_seq)}}));
}

std::vector<ArtifactEntry> ApiClient::artifacts(const std::string& job_id) {
    return artifacts_from_json(get(routes::kJobArtifacts.path({job_id})));
}

std::vector<DatasetSummary> ApiClient::datasets() {
    return datasets_from_json(get(routes::kListDatasets.path()));
}

FolderListing ApiClient::list_folder(const std::string& path) {
    if (path.empty()) return FolderListing::from_json(get(routes::kListFolder.path()));
    return FolderListing::from_json(get(routes::kListFolder.path(), {{"path", path}}));
}

namespace {

// Sends bytes [offset, offset+n) of `in` (a file of `total` bytes) as one PUT piece with
// Content-Range, streaming through `buf`: no copy of the piece in memory, large socket writes.
httplib::Result send_piece(httplib::ClientImpl& cli, const std::string& route, std::ifstream& in,
                           std::vector<char>& buf, std::uint64_t offset, std::uint64_t n,
                           std::uint64_t total, bool& read_failed) {
    httplib::Headers h;
    if (total > 0)
        h.emplace("Content-Range", "bytes " + std::to_string(offset) + "-" +
                                       std::to_string(offset + n - 1) + "/" +
                                       std::to_string(total));
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    read_failed = false;
    auto provider = [&](size_t, size_t length, httplib::DataSink& sink) {
        // httplib asks for the piece in order, `length` bytes still to go.
        const std::size_t want = std::min<std::size_t>(length, buf.size());
        in.read(buf.data(), static_cast<std::streamsize>(want));
        const auto got = static_cast<std::size_t>(in.gcount());
        if (got == 0) {
            read_failed = true;
            return false;
        }
        return sink.write(buf.data(), got);
    };
    return cli.Put(route, h, static_cast<size_t>(n), provider, "application/octet-stream");
}

}  // namespace

std::string ApiClient::upload_id_for(const std::filesystem::path& file) const {
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(file, ec);
    const auto size = std::filesystem::file_size(file, ec);
    const auto mtime = std::filesystem::last_write_time(file, ec).time_since_epoch().count();
    return sha256_hex(endpoint_.url + "\n" + path_to_utf8(ec ? file : absolute) + "\n" +
                      std::to_string(size) + "\n" + std::to_string(static_cast<long long>(mtime)))
        .substr(0, 40);
}

std::string ApiClient::upload_blob(
    const std::filesystem::path& file,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress, std::uint64_t chunk_bytes,
    std::uint64_t hash_while_sending_from) {
    std::error_code ec;
    const std::uint64_t total = std::filesystem::file_size(file, ec);
    if (ec) throw InputError(path_to_utf8(file), "cannot read the file size: " + ec.message());
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError(path_to_utf8(file), "cannot open for reading");
    // Socket writes of 256 KB: on loopback, 4 MB writes measured 30-50% slower than 64-256 KB
    // ones (the agent reads in small pieces; big writes stall in the full socket buffer and stay
    // cold in the cache). See bench_agent.
    std::vector<char> buf(std::min<std::uint64_t>(std::max<std::uint64_t>(total, 1), 256u << 10));
    chunk_bytes = std::max<std::uint64_t>(chunk_bytes, 1);
    const std::string name = path_to_utf8(file.filename());
    auto cli = connect(std::chrono::seconds(120));
    cli->set_keep_alive(true);  // one connection for every piece
    auto send_all = [&](const std::string& route, std::uint64_t offset,
                        const std::function<bool()>& before_piece) {
        while (offset < total) {
            if (before_piece && !before_piece()) return false;
            const std::uint64_t n = std::min<std::uint64_t>(chunk_bytes, total - offset);
            bool read_failed = false;
            auto res = send_piece(*cli, route, in, buf, offset, n, total, read_failed);
            if (read_failed)
                throw Error(path_to_utf8(file) +
                            ": the file changed or shrank while it was uploaded");
            if (!res)
                throw failure(res, endpoint_.url,
                              " (upload resumes from byte " + std::to_string(offset) + ")");
            check(res->status, res->body, "upload " + name);
            offset += n;
            if (progress) progress(offset, total);
        }
        return true;
    };

    if (total < hash_while_sending_from) {
        // Small file: hash first, so a blob the agent has is never sent.
        const std::string sha = sha256_file(file);
        const std::string route = routes::kGetBlob.path({sha});
        auto head = cli->Get(route);
        if (!head) throw failure(head, endpoint_.url);
        if (head->status == 200) {
            if (progress) progress(total, total);
            return sha;
        }
        std::uint64_t offset =
            std::strtoull(head->get_header_value("Upload-Offset").c_str(), nullptr, 10);
        if (offset > total) offset = 0;
        if (progress && offset > 0) progress(offset, total);  // resumed
        if (total == 0) {
            auto res = cli->Put(route, std::string(), "application/octet-stream");
            if (!res) throw failure(res, endpoint_.url);
            check(res->status, res->body, "upload " + name);
        }
        send_all(route, offset, {});
        return sha;
    }

    // Large file: hashing it first would cost a whole extra pass before the first byte goes out,
    // so another thread hashes while the bytes go to an upload named after the file (the same
    // name when run again, so a cut upload resumes). As soon as the hash is known the agent is
    // asked whether it has the blob already; the upload stops there if it has.
    auto hashing = std::async(std::launch::async, [file] { return sha256_file(file); });
    const std::string id = upload_id_for(file);
    const std::string route = routes::kGetUpload.path({id});
    auto where = cli->Get(route);
    if (!where) throw failure(where, endpoint_.url);
    check(where->status, where->body, "upload " + name);
    std::uint64_t offset =
        std::strtoull(where->get_header_value("Upload-Offset").c_str(), nullptr, 10);
    if (offset > total) {  // not this file's bytes after all: start again
        cli->Delete(route);
        offset = 0;
    }
    if (progress && offset > 0) progress(offset, total);  // resumed
    std::string sha;
    bool known = false;
    auto ask_when_hashed = [&] {
        if (!sha.empty() || hashing.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            return true;
        sha = hashing.get();
        auto head = cli->Get(routes::kGetBlob.path({sha}));
        known = head && head->status == 200;
        return !known;
    };
    send_all(route, offset, ask_when_hashed);
    if (sha.empty()) sha = hashing.get();
    if (known) {
        cli->Delete(route);
        if (progress) progress(total, total);
        return sha;
    }
    auto res = cli->Post(routes::kFinishUpload.path({id}), Json{{"sha256", sha}}.dump(),
                         "application/json");
    if (!res) throw failure(res, endpoint_.url);
    check(res->status, res->body, "upload " + name);
    return sha;
}

std::string ApiClient::push_dataset(const std::filesystem::path& folder, const std::string& name,
                                    const UploadProgressFn& progress) {
    Json files = Json::array();
    std::vector<std::filesystem::path> paths;
    UploadProgress at;
    for (const auto& e : std::filesystem::recursive_directory_iterator(folder))
        // A dataset an agent stores goes on to another agent without the store's own files.
        if (e.is_regular_file() &&
            !is_stored_dataset_bookkeeping(path_to_utf8(e.path().lexically_relative(folder)))) {
            paths.push_back(e.path());
            at.total += e.file_size();
        }
    std::sort(paths.begin(), paths.end());
    at.files = paths.size();
    for (const auto& p : paths) {
        at.file = path_to_utf8(p);
        const std::uint64_t before = at.done;
        std::string sha = upload_blob(p, [&](std::uint64_t sent, std::uint64_t) {
            at.done = before + sent;
            if (progress) progress(at);
        });
        auto rel = p.lexically_relative(folder).generic_u8string();  // '/' separators on every OS
        files.push_back({{"path", std::string(rel.begin(), rel.end())}, {"sha256", sha}});
        ++at.files_done;
        if (progress) progress(at);
    }
    Json res = post(routes::kCreateDataset.path(), {{"name", name}, {"files", files}});
    return res.value("id", std::string());
}

StreamStop::StreamStop() : shared_(std::make_shared<Shared>()) {}

void StreamStop::request() {
    if (requested_.exchange(true)) return;
    // ClientImpl::stop() waits for httplib's socket mutex, which a request holds while it
    // connects (up to the connection timeout); the caller (a GUI thread, say) must not.
    std::thread([shared = shared_] {
        std::lock_guard<std::mutex> lock(shared->mutex);
        shared->wake.notify_all();
        if (shared->client) shared->client->stop();
    }).detach();
}

bool StreamStop::attach(httplib::ClientImpl* client) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (requested_) return false;
    shared_->client = client;
    return true;
}

void StreamStop::detach() {
    std::lock_guard<std::mutex> lock(shared_->mutex);  // waits for a stop() under way
    shared_->client = nullptr;
}

bool StreamStop::sleep_for(std::chrono::milliseconds duration) {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    return !shared_->wake.wait_for(lock, duration, [this] { return requested_.load(); });
}

std::int64_t ApiClient::follow_events(const std::string& job_id, std::int64_t after_seq,
                                      const std::function<bool(const Event&)>& on_event,
                                      StreamStop* stop, std::chrono::milliseconds max_backoff) {
    std::chrono::milliseconds backoff(250);
    std::int64_t last = after_seq;
    bool keep_going = true;
    auto stopped = [stop] { return stop && stop->requested(); };
    while (keep_going && !stopped()) {
        auto cli = connect(std::chrono::seconds(60));
        // A stop requested before the socket exists inside Get() is seen at the response's
        // headers (or the read timeout).
        if (stop && !stop->attach(cli.get())) break;
        struct Detach {
            StreamStop* stop;
            ~Detach() {
                if (stop) stop->detach();
            }
        } detach{stop};
        httplib::Headers h{{"Last-Event-ID", std::to_string(last)},
                           {"Accept", "text/event-stream"}};
        std::string buffer;
        bool ended_cleanly = false;
        int status = 0;
        auto res = cli->Get(
            routes::kJobEvents.path({job_id}), h,
            [&](const httplib::Response& r) {
                status = r.status;
                return r.status == 200 && !stopped();
            },
            [&](const char* data, size_t n) {
                buffer.append(data, n);
                for (std::size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
                    std::string block = buffer.substr(0, end);
                    buffer.erase(0, end + 2);
                    std::size_t d = block.find("data: ");
                    if (d == std::string::npos) continue;  // keepalive comment
                    std::string payload = block.substr(d + 6);
                    payload = payload.substr(0, payload.find('\n'));
                    // An agent is not trusted to send only good lines: a broken or hostile one
                    // is skipped (depth-limited parse), never thrown out of the stream's reader.
                    Event e;
                    try {
                        e = event_from_json(parse_json(payload, "event stream"), "event stream");
                    } catch (const InputError&) {
                        continue;
                    }
                    if (e.seq <= last) continue;  // never deliver twice
                    last = e.seq;
                    backoff = std::chrono::milliseconds(250);
                    if (!on_event(e)) {
                        keep_going = false;
                        return false;
                    }
                }
                return !stopped();
            });
        if (res && res->status == 200) ended_cleanly = true;
        if (!keep_going || stopped()) break;
        if (ended_cleanly) break;  // the job finished and the agent closed the stream
        if (status >= 400 && status != 503)
            throw ApiError(status, "event stream of job " + job_id + " refused");
        if (!stop)
            std::this_thread::sleep_for(backoff);
        else if (!stop->sleep_for(backoff))
            break;
        backoff = std::min(backoff * 2, max_backoff);
    }
    return last;
}

std::uint64_t ApiClient::download(
    const std::string& job_id, const std::string& artifact, const std::filesystem::path& out,
    bool overwrite, const std::function<bool(std::uint64_t, std::uint64_t)>& progress) {
    std::error_code ec;
    const std::string out_name = path_to_utf8(out);
    if (std::filesystem::exists(out, ec) && !overwrite)
        throw InputError(out_name,
                         "exists already; choose another name or allow replacing it (--force)");
    auto part = out;
    part += ".crucible-part";
    auto record_file = part;
    record_file += ".json";
    const std::string route = routes::kJobArtifact.path({job_id, artifact});

    // A part is resumed only when its record says it is this artifact of this agent.
    std::string resume_etag;
    std::uint64_t have = 0;
    if (std::filesystem::is_regular_file(part, ec)) {
        try {
            Json r = read_json_file(record_file);
            if (r.value("url", std::string()) == endpoint_.url &&
                r.value("job", std::string()) == job_id &&
                r.value("artifact", std::string()) == artifact)
                resume_etag = r.value("etag", std::string());
        } catch (const std::exception&) {
            resume_etag.clear();  // no record or a damaged one: the part is not trusted
        }
        if (!resume_etag.empty()) have = std::filesystem::file_size(part, ec);
    }
    auto cli = connect(std::chrono::seconds(120));
    for (int attempt = 0; attempt < 3; ++attempt) {
        httplib::Headers h;
        if (have > 0) {
            h.emplace("Range", "bytes=" + std::to_string(have) + "-");
            h.emplace("If-Range", resume_etag);
        }
        std::ofstream file;
        int status = 0;
        bool restart = false, stopped = false;
        std::uint64_t total = 0;
        std::string error_body;
        auto res = cli->Get(
            route, h,
            [&](const httplib::Response& r) {
                status = r.status;
                if (status >= 400) return true;  // read the agent's message
                const std::string etag = r.get_header_value("ETag");
                if (status == 206) {
                    // Another file under the same name (a new best.pt): start again.
                    if (etag.empty() || etag != resume_etag) {
                        restart = true;
                        return false;
                    }
                    static const std::regex range_re(R"(^bytes (\d+)-(\d+)/(\d+)$)");
                    std::smatch m;
                    const std::string cr = r.get_header_value("Content-Range");
                    if (!std::regex_match(cr, m, range_re) || std::stoull(m[1]) != have) {
                        restart = true;
                        return false;
                    }
                    total = std::stoull(m[3]);
                    file.open(part, std::ios::binary | std::ios::app);
                } else if (status == 200) {
                    have = 0;
                    total =
                        std::strtoull(r.get_header_value("Content-Length").c_str(), nullptr, 10);
                    // The record first, so a part on disk is always attributable.
                    write_json_file(record_file, {{"url", endpoint_.url},
                                                  {"job", job_id},
                                                  {"artifact", artifact},
                                                  {"etag", etag}});
                    resume_etag = etag;
                    file.open(part, std::ios::binary | std::ios::trunc);
                } else {
                    return false;
                }
                return static_cast<bool>(file);
            },
            [&](const char* data, size_t n) {
                if (status >= 400) {
                    if (error_body.size() < 65536) error_body.append(data, n);
                    return true;
                }
                file.write(data, static_cast<std::streamsize>(n));
                if (!file) return false;
                have += n;
                if (progress && !progress(have, total)) {
                    stopped = true;
                    return false;
                }
                return true;
            });
        file.close();
        if (restart || status == 416) {  // unrelated, changed or over-long part: from zero
            std::filesystem::remove(part, ec);
            std::filesystem::remove(record_file, ec);
            have = 0;
            resume_etag.clear();
            continue;
        }
        if (stopped)
            throw Error("download of " + artifact + " stopped at byte " + std::to_string(have) +
                        "; run it again to resume");
        if (status >= 400) check(status, error_body, "download " + artifact);
        if (!res)
            throw failure(
                res, endpoint_.url,
                " (the download resumes from byte " + std::to_string(have) + " when run again)");
        if (have != total)
            throw Error("download of " + artifact + " ended at byte " + std::to_string(have) +
                        " of " + std::to_string(total) + "; run it again to resume");
        platform::fsync_file(part);
        platform::replace_file(part, out);
        std::filesystem::remove(record_file, ec);
        return total;
    }
    throw Error("download of " + artifact + " keeps changing on the agent; try again later");
}

}  // namespace crucible::net
