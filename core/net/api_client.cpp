#include "core/net/api_client.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fstream>
#include <regex>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
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

std::unique_ptr<httplib::ClientImpl> ApiClient::connect(std::chrono::seconds read_timeout) const {
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
    cli->set_connection_timeout(10, 0);
    cli->set_read_timeout(read_timeout.count(), 0);
    cli->set_write_timeout(60, 0);
    httplib::Headers headers{{kVersionHeader, std::to_string(kProtocolVersion)}};
    if (!endpoint_.token.empty()) headers.emplace("Authorization", "Bearer " + endpoint_.token);
    cli->set_default_headers(headers);
    return cli;
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
    auto res = ssl.Get("/v1/health");
    if (state.seen.empty())
        throw Error("cannot reach " + url + ": " +
                    (res ? "no certificate" : httplib::to_string(res.error())));
    return state.seen;
}

Json ApiClient::check(int status, const std::string& body, const std::string& what) const {
    Json j;
    try {
        j = body.empty() ? Json::object() : Json::parse(body);
    } catch (const Json::exception&) {
        j = Json{{"raw", body}};
    }
    if (status >= 400) {
        std::string msg = j.contains("error") ? j["error"].value("message", body) : body;
        throw ApiError(status, what + ": " + msg + " (HTTP " + std::to_string(status) + ")");
    }
    if (status == 426) throw ApiError(status, what + ": incompatible versions");
    return j;
}

static std::string describe_failure(const httplib::Result& res, const std::string& url) {
    if (res.error() == httplib::Error::SSLServerVerification ||
        res.error() == httplib::Error::SSLConnection)
        return "TLS handshake with " + url +
               " failed: the agent's certificate does not match the pinned fingerprint (or TLS is "
               "broken). If the "
               "agent's certificate was changed on purpose, remove and re-add the remote.";
    return "cannot reach " + url + ": " + httplib::to_string(res.error());
}

Json ApiClient::get(const std::string& path) {
    auto cli = connect(std::chrono::seconds(60));
    auto res = cli->Get(path);
    if (!res) throw Error(describe_failure(res, endpoint_.url));
    return check(res->status, res->body, "GET " + path);
}

Json ApiClient::post(const std::string& path, const Json& body) {
    auto cli = connect(std::chrono::seconds(60));
    auto res = cli->Post(path, body.dump(), "application/json");
    if (!res) throw Error(describe_failure(res, endpoint_.url));
    return check(res->status, res->body, "POST " + path);
}

Json ApiClient::del(const std::string& path) {
    auto cli = connect(std::chrono::seconds(60));
    auto res = cli->Delete(path);
    if (!res) throw Error(describe_failure(res, endpoint_.url));
    return check(res->status, res->body, "DELETE " + path);
}

std::string ApiClient::upload_blob(
    const std::filesystem::path& file,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress, std::uint64_t chunk_bytes) {
    const std::string sha = sha256_file(file);
    const std::uint64_t total = std::filesystem::file_size(file);
    auto cli = connect(std::chrono::seconds(120));
    const std::string path = "/v1/blobs/" + sha;
    auto head = cli->Get(path);
    if (!head) throw Error(describe_failure(head, endpoint_.url));
    if (head->status == 200) {
        if (progress) progress(total, total);
        return sha;
    }
    std::uint64_t offset =
        std::strtoull(head->get_header_value("Upload-Offset").c_str(), nullptr, 10);
    if (offset > total) offset = 0;
    std::ifstream in(file, std::ios::binary);
    std::string buf;
    do {
        std::uint64_t n = std::min<std::uint64_t>(chunk_bytes, total - offset);
        buf.resize(n);
        in.seekg(static_cast<std::streamoff>(offset));
        in.read(buf.data(), static_cast<std::streamsize>(n));
        httplib::Headers h;
        if (total > 0)
            h.emplace("Content-Range", "bytes " + std::to_string(offset) + "-" +
                                           std::to_string(offset + n - 1) + "/" +
                                           std::to_string(total));
        auto res = cli->Put(path, h, buf, "application/octet-stream");
        if (!res)
            throw Error(describe_failure(res, endpoint_.url) + " (upload resumes from byte " +
                        std::to_string(offset) + ")");
        check(res->status, res->body, "upload " + path_to_utf8(file.filename()));
        offset += n;
        if (progress) progress(offset, total);
    } while (offset < total);
    return sha;
}

std::string ApiClient::push_dataset(const std::filesystem::path& folder, const std::string& name,
                                    const std::function<void(const std::string&)>& progress) {
    Json files = Json::array();
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::recursive_directory_iterator(folder))
        if (e.is_regular_file()) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    std::size_t i = 0;
    for (const auto& p : paths) {
        std::string sha = upload_blob(p);
        auto rel = p.lexically_relative(folder).generic_u8string();  // '/' separators on every OS
        files.push_back({{"path", std::string(rel.begin(), rel.end())}, {"sha256", sha}});
        if (progress)
            progress("uploaded " + std::to_string(++i) + "/" + std::to_string(paths.size()));
    }
    Json res = post("/v1/datasets", {{"name", name}, {"files", files}});
    return res.value("id", std::string());
}

std::int64_t ApiClient::follow_events(const std::string& job_id, std::int64_t after_seq,
                                      const std::function<bool(const Event&)>& on_event,
                                      const std::atomic<bool>* stop,
                                      std::chrono::milliseconds max_backoff) {
    std::chrono::milliseconds backoff(250);
    std::int64_t last = after_seq;
    bool keep_going = true;
    while (keep_going && !(stop && *stop)) {
        auto cli = connect(std::chrono::seconds(60));
        httplib::Headers h{{"Last-Event-ID", std::to_string(last)},
                           {"Accept", "text/event-stream"}};
        std::string buffer;
        bool ended_cleanly = false;
        int status = 0;
        auto res = cli->Get(
            "/v1/jobs/" + job_id + "/events", h,
            [&](const httplib::Response& r) {
                status = r.status;
                return r.status == 200;
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
                    Event e = event_from_json(Json::parse(payload), "event stream");
                    if (e.seq <= last) continue;  // never deliver twice
                    last = e.seq;
                    backoff = std::chrono::milliseconds(250);
                    if (!on_event(e)) {
                        keep_going = false;
                        return false;
                    }
                }
                return !(stop && *stop);
            });
        if (res && res->status == 200) ended_cleanly = true;
        if (!keep_going || (stop && *stop)) break;
        if (ended_cleanly) break;  // the job finished and the agent closed the stream
        if (status >= 400 && status != 503)
            throw ApiError(status, "event stream of job " + job_id + " refused");
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, max_backoff);
    }
    return last;
}

void ApiClient::download(const std::string& job_id, const std::string& artifact,
                         const std::filesystem::path& out) {
    auto cli = connect(std::chrono::seconds(120));
    std::error_code ec;
    std::uint64_t have = std::filesystem::exists(out, ec) ? std::filesystem::file_size(out, ec) : 0;
    httplib::Headers h;
    if (have > 0) h.emplace("Range", "bytes=" + std::to_string(have) + "-");
    std::ofstream file(out, std::ios::binary | (have > 0 ? std::ios::app : std::ios::trunc));
    int status = 0;
    auto res = cli->Get(
        "/v1/jobs/" + job_id + "/artifacts/" + artifact, h,
        [&](const httplib::Response& r) {
            status = r.status;
            if (status == 200 && have > 0) {  // server ignored the range: start over
                file.close();
                file.open(out, std::ios::binary | std::ios::trunc);
            }
            return status == 200 || status == 206;
        },
        [&](const char* data, size_t n) {
            file.write(data, static_cast<std::streamsize>(n));
            return static_cast<bool>(file);
        });
    if (status == 416) return;  // already complete
    if (!res && status == 0) throw Error(describe_failure(res, endpoint_.url));
    if (status >= 400)
        throw ApiError(status,
                       "download of " + artifact + " failed (HTTP " + std::to_string(status) + ")");
}

}  // namespace crucible::net
