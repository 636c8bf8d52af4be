#include "core/net/s3_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/base/file_io.h"
#include "core/base/sha256.h"

namespace crucible::net {

namespace {

constexpr const char* kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string s) {
    for (auto& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return std::string(s);
}

std::string digest(const EVP_MD* md, std::string_view bytes) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(bytes.data(), bytes.size(), out, &n, md, nullptr);
    return std::string(reinterpret_cast<const char*>(out), n);
}

std::string to_hex(std::string_view raw) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : raw) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string base64(std::string_view raw) {
    std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(raw.data()),
                                  static_cast<int>(raw.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string xml_unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '&') {
            out += s[i];
            continue;
        }
        const auto end = s.find(';', i);
        if (end == std::string_view::npos) {
            out += s[i];
            continue;
        }
        const std::string_view name = s.substr(i + 1, end - i - 1);
        if (name == "amp")
            out += '&';
        else if (name == "lt")
            out += '<';
        else if (name == "gt")
            out += '>';
        else if (name == "quot")
            out += '"';
        else if (name == "apos")
            out += '\'';
        else if (!name.empty() && name[0] == '#') {
            const bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
            const unsigned long code =
                std::strtoul(std::string(name.substr(hex ? 2 : 1)).c_str(), nullptr, hex ? 16 : 10);
            if (code < 0x80) {
                out += static_cast<char>(code);
            } else if (code < 0x800) {
                out += static_cast<char>(0xC0 | (code >> 6));
                out += static_cast<char>(0x80 | (code & 0x3F));
            } else if (code < 0x10000) {
                out += static_cast<char>(0xE0 | (code >> 12));
                out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                out += static_cast<char>(0x80 | (code & 0x3F));
            } else {
                out += static_cast<char>(0xF0 | (code >> 18));
                out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
                out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                out += static_cast<char>(0x80 | (code & 0x3F));
            }
        } else {
            out.append(s.substr(i, end - i + 1));
        }
        i = end;
    }
    return out;
}

// The raw contents of every <tag>...</tag> in `xml`: S3's answers are flat, small documents
// (a list of objects, of parts, an error), so no general XML parser is needed.
std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag) {
    std::vector<std::string_view> out;
    const std::string open = "<" + std::string(tag) + ">";
    const std::string close = "</" + std::string(tag) + ">";
    std::size_t pos = 0;
    while ((pos = xml.find(open, pos)) != std::string_view::npos) {
        const auto start = pos + open.size();
        const auto end = xml.find(close, start);
        if (end == std::string_view::npos) break;
        out.push_back(xml.substr(start, end - start));
        pos = end + close.size();
    }
    return out;
}

std::string xml_value(std::string_view xml, std::string_view tag) {
    auto all = xml_elements(xml, tag);
    return all.empty() ? std::string() : xml_unescape(all.front());
}

std::string unquote(std::string s) {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}

bool is_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// Retried codes: the server could not keep up, or the bytes changed on the way.
bool transient_code(const std::string& code) {
    return code == "SlowDown" || code == "InternalError" || code == "ServiceUnavailable" ||
           code == "RequestTimeout" || code == "BadDigest" || code == "InvalidDigest" ||
           code == "XAmzContentSHA256Mismatch" || code == "RequestTimeTooSkewed";
}

bool host_is_address(const std::string& host) {
    if (host == "localhost" || (!host.empty() && host.front() == '[')) return true;
    return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    });
}

struct Endpoint {
    std::string scheme, host, port, path;
};

Endpoint parse_endpoint(const std::string& endpoint) {
    Endpoint e;
    auto rest = std::string_view(endpoint);
    const auto sep = rest.find("://");
    if (sep == std::string_view::npos)
        throw InputError("endpoint",
                         "'" + endpoint + "': expected http://HOST[:PORT] or https://...");
    e.scheme = lower(std::string(rest.substr(0, sep)));
    if (e.scheme != "http" && e.scheme != "https")
        throw InputError("endpoint", "'" + endpoint + "': the scheme must be http or https");
    rest.remove_prefix(sep + 3);
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) e.path = std::string(rest.substr(slash));
    while (!e.path.empty() && e.path.back() == '/')
        e.path.pop_back();
    const auto colon = authority.rfind(':');
    const auto bracket = authority.rfind(']');
    if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
        e.port = std::string(authority.substr(colon + 1));
        authority = authority.substr(0, colon);
    }
    e.host = std::string(authority);
    if (e.host.empty()) throw InputError("endpoint", "'" + endpoint + "' names no host");
    return e;
}

std::string part_query(int number, const std::string& upload_id) {
    // SigV4's canonical query is sorted by name; libcurl before 8.x signs the query as given.
    return "partNumber=" + std::to_string(number) + "&uploadId=" + s3_uri_encode(upload_id, false);
}

}  // namespace

std::string s3_uri_encode(std::string_view text, bool keep_slash) {
    static const char* digits = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (keep_slash && c == '/')) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += digits[c >> 4];
            out += digits[c & 15];
        }
    }
    return out;
}

Json MultipartProgress::to_json() const {
    Json list = Json::array();
    for (const auto& p : parts)
        list.push_back({{"number", p.number}, {"etag", p.etag}, {"sha256", p.sha256_base64}});
    return {{"upload_id", upload_id}, {"part_size", part_size}, {"parts", list}};
}

MultipartProgress MultipartProgress::from_json(const Json& json, const std::string& where) {
    MultipartProgress p;
    if (!json.is_object()) return p;
    p.upload_id = get_string(json, "upload_id", where);
    p.part_size = static_cast<std::uint64_t>(get_integer(json, "part_size", where));
    for (const auto& part : json.value("parts", Json::array()))
        p.parts.push_back({static_cast<int>(get_integer(part, "number", where)),
                           get_string(part, "etag", where), get_string(part, "sha256", where)});
    return p;
}

struct S3Client::Request {
    std::string method = "GET";
    std::string key;    // "" for the bucket itself
    std::string query;  // already canonical: sorted by name, encoded, every name with '='
    std::vector<std::string> headers;
    std::string_view body;
    bool capped = false;  // an upload under the bandwidth cap
    // Downloads: where the body goes (2xx answers only), and what to do before a new attempt.
    std::function<void(const char*, std::size_t)> sink;
    std::function<void()> restart;
};

struct S3Client::Response {
    long status = 0;
    std::string body;
    std::map<std::string, std::string> headers;  // lower-case names

    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
    std::string error_code() const { return xml_value(body, "Code"); }
};

S3Client::S3Client(S3Location location, S3Credentials credentials, S3Options options)
    : location_(std::move(location)),
      credentials_(std::move(credentials)),
      options_(std::move(options)) {
    global_init();
    parse_endpoint(location_.endpoint);  // refuses a malformed endpoint now
    if (location_.bucket.empty()) throw InputError("bucket", "name the bucket");
    if (location_.region.empty()) location_.region = "us-east-1";
    if (options_.part_size < (5ull << 20))
        throw InputError("part_size", "S3 parts are at least 5 MiB");
    curl_ = curl_easy_init();
    if (!curl_) throw Error("libcurl could not make a handle");
}

S3Client::~S3Client() {
    if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string S3Client::describe(const std::string& key) const {
    return "s3://" + location_.bucket + "/" + key;
}

std::string S3Client::url(const std::string& key, const std::string& query) const {
    const Endpoint e = parse_endpoint(location_.endpoint);
    const bool path_style = location_.path_style.value_or(host_is_address(e.host));
    std::string out = e.scheme + "://";
    if (!path_style) out += location_.bucket + ".";
    out += e.host;
    if (!e.port.empty()) out += ":" + e.port;
    out += e.path;
    if (path_style) out += "/" + s3_uri_encode(location_.bucket, false);
    out += "/" + s3_uri_encode(key, true);
    if (!query.empty()) out += "?" + query;
    return out;
}

S3Client::Response S3Client::perform_once(const Request& r) {
    CURL* curl = static_cast<CURL*>(curl_);
    curl_easy_reset(curl);
    Response response;
    const std::string target = url(r.key, r.query);
    curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
    const std::string sigv4 = "aws:amz:" + location_.region + ":s3";
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, credentials_.access_key_id.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, credentials_.secret_access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_s);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options_.stall_timeout_s);
    if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());

    // The payload's SHA-256 is signed (AWS wants the header); libcurl takes it from there.
    const std::string payload_sha =
        r.body.empty() ? std::string(kEmptySha256) : to_hex(digest(EVP_sha256(), r.body));
    curl_slist* headers = nullptr;
    const std::string sha_header = "x-amz-content-sha256: " + payload_sha;
    headers = curl_slist_append(headers, sha_header.c_str());
    for (const auto& h : r.headers)
        headers = curl_slist_append(headers, h.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

    struct Upload {
        std::string_view body;
        std::size_t offset = 0;
    } upload{r.body};
    if (r.method == "PUT") {
        curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
        curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
        curl_easy_setopt(
            curl, CURLOPT_READFUNCTION,
            +[](char* buffer, std::size_t size, std::size_t n, void* user) -> std::size_t {
                auto* u = static_cast<Upload*>(user);
                const std::size_t take = std::min(size * n, u->body.size() - u->offset);
                std::copy_n(u->body.data() + u->offset, take, buffer);
                u->offset += take;
                return take;
            });
        if (r.capped && options_.max_upload_bytes_per_s > 0)
            curl_easy_setopt(curl, CURLOPT_MAX_SEND_SPEED_LARGE,
                             static_cast<curl_off_t>(options_.max_upload_bytes_per_s));
    } else if (r.method == "POST") {
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
        // Never a null pointer: libcurl would then read the body from stdin.
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.empty() ? "" : r.body.data());
    } else if (r.method == "HEAD") {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (r.method != "GET") {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }

    struct Receive {
        CURL* curl;
        const Request* request;
        Response* response;
    } receive{curl, &r, &response};
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &receive);
    curl_easy_setopt(
        curl, CURLOPT_WRITEFUNCTION,
        +[](char* data, std::size_t size, std::size_t n, void* user) -> std::size_t {
            auto* rc = static_cast<Receive*>(user);
            long status = 0;
            curl_easy_getinfo(rc->curl, CURLINFO_RESPONSE_CODE, &status);
            if (rc->request->sink && status >= 200 && status < 300) {
                rc->request->sink(data, size * n);
            } else {
                if (rc->response->body.size() > (16u << 20)) return 0;  // not an S3 answer
                rc->response->body.append(data, size * n);
            }
            return size * n;
        });
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(
        curl, CURLOPT_HEADERFUNCTION,
        +[](char* data, std::size_t size, std::size_t n, void* user) -> std::size_t {
            auto* resp = static_cast<Response*>(user);
            std::string_view line(data, size * n);
            if (line.rfind("HTTP/", 0) == 0) {
                resp->headers.clear();  // a 100 Continue came first
            } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
                resp->headers[lower(std::string(line.substr(0, colon)))] =
                    trim(line.substr(colon + 1));
            }
            return size * n;
        });

    if (r.restart) r.restart();
    char error[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
        throw S3Error(r.method + " " + describe(r.key) + ": " +
                          (error[0] ? std::string(error) : curl_easy_strerror(rc)),
                      0, "");
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    return response;
}

S3Client::Response S3Client::perform(const Request& r) {
    auto wait = options_.first_backoff;
    for (int attempt = 1;; ++attempt) {
        const bool last = attempt >= std::max(options_.attempts, 1);
        std::string why;
        long status = 0;
        std::string code;
        try {
            Response response = perform_once(r);
            status = response.status;
            code = response.error_code();
            // CompleteMultipartUpload may answer 200 with an <Error> document.
            const bool error_body = status == 200 && r.method == "POST" &&
                                    response.body.find("<Error>") != std::string::npos;
            if (status >= 200 && status < 300 && !error_body) return response;
            const std::string message = xml_value(response.body, "Message");
            why = r.method + " " + describe(r.key) + ": HTTP " + std::to_string(status) +
                  (code.empty() ? "" : " " + code) + (message.empty() ? "" : ": " + message);
            const bool retry = status >= 500 || status == 429 || error_body || transient_code(code);
            if (!retry || last) throw S3Error(why, status, code);
        } catch (const S3Error& e) {
            if (e.status() != 0 || last) throw;
            why = e.what();
        }
        spdlog::debug("{} (attempt {} of {}; again in {} ms)", why, attempt, options_.attempts,
                      wait.count());
        std::this_thread::sleep_for(wait);
        wait = std::min(wait * 2, std::chrono::milliseconds(30000));
    }
}

void S3Client::put_object(const std::string& key, std::string_view bytes,
                          const std::map<std::string, std::string>& metadata) {
    Request r;
    r.method = "PUT";
    r.key = key;
    r.body = bytes;
    r.capped = true;
    const std::string md5 = digest(EVP_md5(), bytes);
    r.headers.push_back("x-amz-checksum-sha256: " + base64(digest(EVP_sha256(), bytes)));
    r.headers.push_back("Content-Type: application/octet-stream");
    for (const auto& [name, value] : metadata)
        r.headers.push_back("x-amz-meta-" + lower(name) + ": " + value);
    for (int attempt = 1;; ++attempt) {
        Response response = perform(r);
        const std::string etag = unquote(response.header("etag"));
        const bool kms = response.headers.count("x-amz-server-side-encryption-aws-kms-key-id") ||
                         response.headers.count("x-amz-server-side-encryption-customer-algorithm");
        if (kms || etag.size() != 32 || !is_hex(etag) || lower(etag) == to_hex(md5)) return;
        if (attempt >= options_.attempts)
            throw S3Error("PUT " + describe(key) +
                              ": the server stored other bytes than were sent " + "(ETag " + etag +
                              ", MD5 " + to_hex(md5) + ")",
                          0, "BadDigest");
        spdlog::warn("PUT {}: the bytes changed on the way; sending again", describe(key));
    }
}

std::vector<MultipartProgress::Part> S3Client::list_parts(const std::string& key,
                                                          const std::string& upload_id) {
    std::vector<MultipartProgress::Part> parts;
    std::string marker;
    for (;;) {
        Request r;
        r.key = key;
        r.query = (marker.empty() ? "" : "part-number-marker=" + marker + "&") +
                  "uploadId=" + s3_uri_encode(upload_id, false);
        Response response = perform(r);
        for (auto part : xml_elements(response.body, "Part"))
            parts.push_back({std::atoi(xml_value(part, "PartNumber").c_str()),
                             unquote(xml_value(part, "ETag")), xml_value(part, "ChecksumSHA256")});
        if (xml_value(response.body, "IsTruncated") != "true") break;
        marker = xml_value(response.body, "NextPartNumberMarker");
        if (marker.empty()) break;
    }
    return parts;
}

UploadOutcome S3Client::upload_file(const std::string& key, const std::filesystem::path& file,
                                    const std::map<std::string, std::string>& metadata,
                                    MultipartProgress& progress,
                                    const std::function<void()>& on_part,
                                    const std::function<bool()>& stop) {
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(file, ec);
    if (ec) throw InputError(path_to_utf8(file), "cannot read its size: " + ec.message());
    UploadOutcome outcome;
    if (size <= options_.part_size && progress.upload_id.empty()) {
        const std::string bytes = read_file_bytes(file);
        put_object(key, bytes, metadata);
        outcome.complete = true;
        outcome.bytes_sent = bytes.size();
        return outcome;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError(path_to_utf8(file), "cannot open it");
    auto read_part = [&](int number, std::uint64_t part_size) {
        const std::uint64_t offset = static_cast<std::uint64_t>(number - 1) * part_size;
        std::string bytes(static_cast<std::size_t>(std::min(part_size, size - offset)), '\0');
        in.seekg(static_cast<std::streamoff>(offset));
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (static_cast<std::size_t>(in.gcount()) != bytes.size())
            throw InputError(path_to_utf8(file), "changed size while it was uploaded");
        return bytes;
    };

    // An upload begun before (the agent restarted): keep the parts the server still has and
    // that hold this file's bytes.
    std::map<int, MultipartProgress::Part> done;
    if (!progress.upload_id.empty()) {
        try {
            const auto listed = list_parts(key, progress.upload_id);
            for (const auto& mine : progress.parts)
                for (const auto& theirs : listed)
                    if (theirs.number == mine.number && lower(theirs.etag) == lower(mine.etag) &&
                        base64(digest(EVP_sha256(), read_part(mine.number, progress.part_size))) ==
                            mine.sha256_base64)
                        done[mine.number] = mine;
        } catch (const S3Error& e) {
            if (e.status() != 404) throw;  // NoSuchUpload: it expired or was aborted
            spdlog::info("{}: the unfinished upload is gone on the server; starting again",
                         describe(key));
            progress = {};
        }
    }
    if (progress.upload_id.empty()) {
        Request r;
        r.method = "POST";
        r.key = key;
        r.query = "uploads=";
        r.headers = {"x-amz-checksum-algorithm: SHA256", "Content-Type: application/octet-stream"};
        for (const auto& [name, value] : metadata)
            r.headers.push_back("x-amz-meta-" + lower(name) + ": " + value);
        Response response = perform(r);
        progress = {};
        progress.upload_id = xml_value(response.body, "UploadId");
        // S3 takes at most 10,000 parts: a file beyond 10,000 parts of part_size gets larger
        // ones (whole MiB).
        progress.part_size = std::max(options_.part_size, ((size / 10000) | ((1u << 20) - 1)) + 1);
        if (progress.upload_id.empty())
            throw S3Error("POST " + describe(key) + "?uploads: no UploadId in the answer", 0, "");
        if (on_part) on_part();  // the upload id is known before any part goes
    }
    progress.parts.clear();
    for (const auto& [n, part] : done)
        progress.parts.push_back(part);

    const std::uint64_t part_size = progress.part_size;
    const int count = static_cast<int>((size + part_size - 1) / part_size);
    std::string md5_concat;  // for the multipart ETag check at the end
    bool md5_complete = true;
    for (int number = 1; number <= count; ++number) {
        if (done.count(number)) {
            md5_complete = false;  // not re-read: the final ETag check is skipped
            continue;
        }
        if (stop && stop()) return outcome;
        const std::string bytes = read_part(number, part_size);
        const std::string md5 = digest(EVP_md5(), bytes);
        const std::string sha = base64(digest(EVP_sha256(), bytes));
        md5_concat += md5;
        Request r;
        r.method = "PUT";
        r.key = key;
        r.query = part_query(number, progress.upload_id);
        r.body = bytes;
        r.capped = true;
        r.headers = {"x-amz-checksum-sha256: " + sha};
        for (int attempt = 1;; ++attempt) {
            Response response = perform(r);
            const std::string etag = unquote(response.header("etag"));
            const bool kms =
                response.headers.count("x-amz-server-side-encryption-aws-kms-key-id") ||
                response.headers.count("x-amz-server-side-encryption-customer-algorithm");
            const bool intact =
                kms || etag.size() != 32 || !is_hex(etag) || lower(etag) == to_hex(md5);
            if (intact && !etag.empty()) {
                progress.parts.push_back({number, etag, sha});
                break;
            }
            if (attempt >= options_.attempts) {
                const std::string why = "part " + std::to_string(number) + " of " + describe(key) +
                                        " arrived altered every time (ETag " + etag + ", MD5 " +
                                        to_hex(md5) + "); upload aborted";
                try {
                    abort_multipart(key, progress.upload_id);
                } catch (const std::exception& e) {
                    spdlog::warn("{}: abort: {}", describe(key), e.what());
                }
                progress = {};
                throw S3Error(why, 0, "BadDigest");
            }
            spdlog::warn("{}: part {} arrived altered (ETag {}, MD5 {}); sending it again",
                         describe(key), number, etag, to_hex(md5));
        }
        outcome.bytes_sent += bytes.size();
        outcome.parts_sent += 1;
        if (on_part) on_part();
    }

    std::sort(progress.parts.begin(), progress.parts.end(),
              [](const auto& a, const auto& b) { return a.number < b.number; });
    std::string xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
    for (const auto& p : progress.parts)
        xml += "<Part><PartNumber>" + std::to_string(p.number) + "</PartNumber><ETag>\"" + p.etag +
               "\"</ETag><ChecksumSHA256>" + p.sha256_base64 + "</ChecksumSHA256></Part>";
    xml += "</CompleteMultipartUpload>";
    Request r;
    r.method = "POST";
    r.key = key;
    r.query = "uploadId=" + s3_uri_encode(progress.upload_id, false);
    r.body = xml;
    r.headers = {"Content-Type: application/xml"};
    Response response = perform(r);
    // The object's ETag is the MD5 of the parts' MD5s, "-<count>": one more check that the
    // parts assembled are the parts sent (when every part was hashed in this call).
    const std::string etag = unquote(xml_unescape(xml_value(response.body, "ETag")));
    const std::string expected =
        to_hex(digest(EVP_md5(), md5_concat)) + "-" + std::to_string(count);
    if (md5_complete && etag.find('-') != std::string::npos && lower(etag) != expected)
        throw S3Error("complete " + describe(key) + ": the object's ETag " + etag +
                          " is not that of the parts sent (" + expected + ")",
                      0, "BadDigest");
    progress = {};
    outcome.complete = true;
    return outcome;
}

std::map<std::string, std::string> S3Client::get_object_to_file(const std::string& key,
                                                                const std::filesystem::path& file,
                                                                std::string* sha256_hex) {
    std::ofstream out;
    std::unique_ptr<Sha256> hash;
    Request r;
    r.key = key;
    r.restart = [&] {
        out.close();
        out.open(file, std::ios::binary | std::ios::trunc);
        if (!out) throw InputError(path_to_utf8(file), "cannot write it");
        hash = std::make_unique<Sha256>();
    };
    r.sink = [&](const char* data, std::size_t n) {
        out.write(data, static_cast<std::streamsize>(n));
        hash->update(data, n);
    };
    Response response = perform(r);
    out.close();
    if (!out) throw InputError(path_to_utf8(file), "could not be written (disk full?)");
    if (sha256_hex) *sha256_hex = hash->hex_digest();
    std::map<std::string, std::string> meta;
    for (const auto& [name, value] : response.headers)
        if (name.rfind("x-amz-meta-", 0) == 0) meta[name.substr(11)] = value;
    return meta;
}

std::string S3Client::get_object(const std::string& key) {
    Request r;
    r.key = key;
    return perform(r).body;
}

std::vector<S3Object> S3Client::list(const std::string& prefix) {
    std::vector<S3Object> out;
    std::string token;
    for (;;) {
        Request r;
        r.query = (token.empty() ? "" : "continuation-token=" + s3_uri_encode(token, false) + "&") +
                  "list-type=2&prefix=" + s3_uri_encode(prefix, false);
        Response response = perform(r);
        for (auto item : xml_elements(response.body, "Contents"))
            out.push_back(
                {xml_value(item, "Key"), static_cast<std::uint64_t>(std::strtoull(
                                             xml_value(item, "Size").c_str(), nullptr, 10))});
        if (xml_value(response.body, "IsTruncated") != "true") break;
        token = xml_value(response.body, "NextContinuationToken");
        if (token.empty()) break;
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    return out;
}

void S3Client::delete_object(const std::string& key) {
    Request r;
    r.method = "DELETE";
    r.key = key;
    perform(r);
}

void S3Client::abort_multipart(const std::string& key, const std::string& upload_id) {
    Request r;
    r.method = "DELETE";
    r.key = key;
    r.query = "uploadId=" + s3_uri_encode(upload_id, false);
    try {
        perform(r);
    } catch (const S3Error& e) {
        if (e.status() != 404) throw;  // already gone
    }
}

void S3Client::create_bucket() {
    Request r;
    r.method = "PUT";
    std::string body;
    if (location_.region != "us-east-1")
        body = "<CreateBucketConfiguration><LocationConstraint>" + location_.region +
               "</LocationConstraint></CreateBucketConfiguration>";
    r.body = body;
    try {
        perform(r);
    } catch (const S3Error& e) {
        if (e.code() != "BucketAlreadyOwnedByYou") throw;
    }
}

}  // namespace crucible::net
