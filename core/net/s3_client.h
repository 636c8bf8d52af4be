#pragma once
// A small client for S3-compatible object storage (AWS S3, Aliyun OSS, Tencent COS, MinIO,
// Azure through an S3 gateway) on libcurl, signed with libcurl's own SigV4
// (CURLOPT_AWS_SIGV4): no cloud SDK. It serves the agent's checkpoint mirror
// (core/jobs/checkpoint_mirror.h): resumable multipart uploads with a SHA-256 checksum per part,
// verified downloads, listing and deletion, a cap on the upload rate, and retries with backoff
// on 5xx answers and network failures. It knows nothing of jobs or checkpoints, and keeps no
// state between calls but the connection: the caller persists a multipart upload's progress.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.h"
#include "core/base/json.h"

namespace crucible::net {

struct S3Location {
    std::string endpoint;  // "https://s3.eu-central-1.amazonaws.com", "http://127.0.0.1:9000"
    std::string bucket;
    std::string region = "us-east-1";
    // Path-style URLs (endpoint/bucket/key) or virtual-hosted ones (bucket.endpoint/key).
    // Unset: path style for an IP address or localhost (MinIO, moto), virtual-hosted otherwise
    // (AWS's default; Aliyun OSS and Tencent COS accept nothing else).
    std::optional<bool> path_style;
};

struct S3Credentials {
    std::string access_key_id;
    std::string secret_access_key;
};

struct S3Options {
    std::uint64_t max_upload_bytes_per_s = 0;      // 0: no cap (CURLOPT_MAX_SEND_SPEED_LARGE)
    std::uint64_t part_size = 8ull << 20;          // files larger than this go up in parts
    int attempts = 5;                              // per request, on 5xx, 429 and network errors
    std::chrono::milliseconds first_backoff{250};  // doubled after each failed attempt
    long connect_timeout_s = 15;
    long stall_timeout_s = 60;  // a transfer below 1 KB/s for this long is retried
    std::string ca_file;        // PEM bundle for an endpoint with a private CA; "" = system's
};

// A refusal by the server (4xx, or a 5xx after every retry), or a transfer that failed.
class S3Error : public Error {
  public:
    S3Error(const std::string& message, long status, std::string code)
        : Error(message), status_(status), code_(std::move(code)) {}
    long status() const { return status_; }            // 0: no HTTP answer (network)
    const std::string& code() const { return code_; }  // "NoSuchKey", "BadDigest", ...

  private:
    long status_;
    std::string code_;
};

struct S3Object {
    std::string key;
    std::uint64_t size = 0;
};

// The parts of an unfinished multipart upload, persisted by the caller between parts so that an
// upload cut by a restart goes on where it stopped.
struct MultipartProgress {
    struct Part {
        int number = 0;
        std::string etag;
        std::string sha256_base64;  // the part's x-amz-checksum-sha256
    };
    std::string upload_id;  // "" when no upload has started
    std::uint64_t part_size = 0;
    std::vector<Part> parts;

    Json to_json() const;
    static MultipartProgress from_json(const Json& json, const std::string& where);
};

struct UploadOutcome {
    bool complete = false;         // false: stopped on request; `progress` says how far it got
    std::uint64_t bytes_sent = 0;  // body bytes of this call (parts resumed are not resent)
    int parts_sent = 0;            // parts this call sent (0 for a single PUT)
};

class S3Client {
  public:
    S3Client(S3Location location, S3Credentials credentials, S3Options options = {});
    ~S3Client();
    S3Client(const S3Client&) = delete;
    S3Client& operator=(const S3Client&) = delete;

    const S3Location& location() const { return location_; }
    // "s3://bucket/key", for messages.
    std::string describe(const std::string& key) const;

    // Uploads `file` as `key` with user metadata (x-amz-meta-<name>): one PUT up to part_size,
    // a multipart upload above it. Each part carries its SHA-256 (x-amz-checksum-sha256, which
    // the server checks), and the ETag the server answers must be the part's MD5 (unless the
    // bucket encrypts with KMS): a part altered on the way is refused, sent again, and after
    // `attempts` the upload is aborted with an S3Error. `progress` holds an unfinished upload
    // of this file (the parts the server lists are checked and not sent again); `on_part` runs
    // after every part (persist `progress` there); `stop` is asked between parts.
    UploadOutcome upload_file(const std::string& key, const std::filesystem::path& file,
                              const std::map<std::string, std::string>& metadata,
                              MultipartProgress& progress,
                              const std::function<void()>& on_part = {},
                              const std::function<bool()>& stop = {});
    void put_object(const std::string& key, std::string_view bytes,
                    const std::map<std::string, std::string>& metadata = {});
    // Downloads `key` into `file` (overwritten) and returns the object's user metadata
    // (lower-case names without the x-amz-meta- prefix); `sha256_hex` receives the SHA-256 of
    // the bytes written.
    std::map<std::string, std::string> get_object_to_file(const std::string& key,
                                                          const std::filesystem::path& file,
                                                          std::string* sha256_hex = nullptr);
    std::string get_object(const std::string& key);
    // Every object whose key starts with `prefix`, in key order (pages of 1000 followed).
    std::vector<S3Object> list(const std::string& prefix);
    void delete_object(const std::string& key);
    void abort_multipart(const std::string& key, const std::string& upload_id);
    void create_bucket();  // tests and first set-up; an existing bucket of yours is fine

  private:
    struct Response;
    struct Request;
    Response perform(const Request& request);
    Response perform_once(const Request& request);
    std::string url(const std::string& key, const std::string& query) const;
    std::vector<MultipartProgress::Part> list_parts(const std::string& key,
                                                    const std::string& upload_id);

    S3Location location_;
    S3Credentials credentials_;
    S3Options options_;
    void* curl_ = nullptr;  // CURL*, kept for its connection cache
};

// RFC 3986 encoding of everything but unreserved characters (and '/' when `keep_slash`), as
// SigV4's canonical URI and query want it.
std::string s3_uri_encode(std::string_view text, bool keep_slash);

}  // namespace crucible::net
