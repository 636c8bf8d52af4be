#pragma once
// Client of the agent API (used by the CLI and the studio). TLS connections are pinned to the
// certificate fingerprint the user confirmed on first contact (as SSH does): a server that
// presents another certificate is refused. Event streams reconnect with backoff and continue
// after the last seq, so each event is delivered once.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/json.h"
#include "core/net/api_routes.h"
#include "core/net/api_types.h"

namespace httplib {
class ClientImpl;
}

namespace crucible::net {

struct RemoteEndpoint {
    std::string url;  // http://127.0.0.1:7443 or https://gpu1:7443
    std::string token;
    std::string fingerprint;  // pinned "AB:CD:..." (https only)
};

struct ParsedUrl {
    bool https = false;
    std::string host;
    int port = 0;
};
ParsedUrl parse_url(const std::string& url);  // InputError("url", ...) on a bad URL

// Why a call to the agent failed, as a caller decides what to do about it: ask for another token
// (Unauthorized), wait (RateLimited, Unreachable), re-pin (CertificateMismatch), show the
// agent's message (the rest).
enum class ApiErrorKind {
    Unreachable,          // no connection, or it broke (status 0)
    CertificateMismatch,  // TLS: not the pinned certificate (status 0)
    BadRequest,           // 400, 415, 422: the request itself is wrong
    Unauthorized,         // 401: no token, or a wrong or revoked one
    Forbidden,            // 403: this token may not do that
    NotFound,             // 404
    Conflict,             // 409: not possible in the job's state, missing blobs
    TooLarge,             // 413
    RateLimited,          // 429: too many failed logins from this address
    Incompatible,         // 426: client and agent versions do not speak together
    Server,               // 5xx and anything else
};
const char* api_error_kind_name(ApiErrorKind kind);  // "unauthorized", ...
ApiErrorKind api_error_kind_for_status(int status);

// A failed call: the kind, the HTTP status (0 without an answer), the agent's error code
// ("no_such_job"; empty without one) and a message for the user that names the request.
class ApiError : public Error {
  public:
    ApiError(int status, const std::string& message, std::string code = {})
        : Error(message),
          status_(status),
          kind_(api_error_kind_for_status(status)),
          code_(std::move(code)) {}
    ApiError(ApiErrorKind kind, const std::string& message)
        : Error(message), status_(0), kind_(kind) {}
    int status() const { return status_; }
    ApiErrorKind kind() const { return kind_; }
    const std::string& code() const { return code_; }

  private:
    int status_;
    ApiErrorKind kind_;
    std::string code_;
};

// Ends a follow_events call from another thread: request() returns at once (it sets a flag and
// hands the rest to a short-lived thread of its own), cuts a reconnect's backoff short and
// closes the connection the call waits on (httplib's ClientImpl::stop(), which may wait while
// a connection is being made, shuts the socket down so a blocked read returns).
class StreamStop {
  public:
    StreamStop();
    void request();
    bool requested() const { return requested_.load(); }

  private:
    friend class ApiClient;
    struct Shared {
        std::mutex mutex;
        std::condition_variable wake;
        httplib::ClientImpl* client = nullptr;
    };
    bool attach(httplib::ClientImpl* client);  // false when a stop was requested already
    void detach();
    bool sleep_for(std::chrono::milliseconds duration);  // false when stopped meanwhile

    std::atomic<bool> requested_{false};
    std::shared_ptr<Shared> shared_;  // also held by the thread request() starts
};

// Where an upload of one or more files stands (push_dataset, upload_local_inputs).
struct UploadProgress {
    std::string file;                   // the file being sent
    std::uint64_t done = 0, total = 0;  // bytes of every file of the upload
    std::size_t files_done = 0, files = 0;
};
// Called as pieces go. Throwing (UploadCanceled) stops the upload; running it again resumes it
// (blobs the agent has are not sent again, a large file continues from its last piece).
using UploadProgressFn = std::function<void(const UploadProgress&)>;
class UploadCanceled : public Error {
  public:
    UploadCanceled() : Error("upload canceled") {}
};

class ApiClient {
  public:
    explicit ApiClient(RemoteEndpoint endpoint);
    ~ApiClient();

    // Connects without trusting and returns the server certificate's fingerprint (first contact).
    static std::string probe_fingerprint(const std::string& url);

    // Typed calls, one per route of api_routes.h. A failed call is an ApiError; an answer that
    // does not have the type's shape is an InputError naming the field.
    void health();
    AgentInfo info();
    GpuReport gpus();
    JobInfo submit(const SubmitRequest& request);
    std::vector<JobInfo> jobs();
    JobInfo job(const std::string& job_id);
    void control(const std::string& job_id, JobAction action);
    void delete_job(const std::string& job_id);
    // The stored events after `after_seq` (GET .../events?format=json), in seq order.
    std::vector<Event> events(const std::string& job_id, std::int64_t after_seq = -1);
    std::vector<ArtifactEntry> artifacts(const std::string& job_id);
    std::vector<DatasetSummary> datasets();
    // The shared roots (empty `path`) or one folder inside them.
    FolderListing list_folder(const std::string& path = {});

    // Raw JSON calls on a route, for what has no typed call (tests, hostile requests).
    Json get(const std::string& path);
    // GET with query parameters, each value percent-encoded (paths with spaces, non-ASCII).
    Json get(const std::string& path, const std::multimap<std::string, std::string>& query);
    Json post(const std::string& path, const Json& body);
    Json del(const std::string& path);

    // Uploads a file as a blob unless the agent has it; resumes a partial upload. Returns the
    // SHA-256. `progress(sent, total)` is called per chunk. A file under
    // `hash_while_sending_from` bytes is hashed first (a known blob is never sent); a larger one
    // is hashed on another thread while its bytes go to /v1/uploads/<upload_id_for(file)>, and
    // the upload stops as soon as the hash shows the agent has the blob already.
    std::string upload_blob(const std::filesystem::path& file,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress = {},
                            std::uint64_t chunk_bytes = 16u << 20,
                            std::uint64_t hash_while_sending_from = 32u << 20);
    // The upload name of a large file: the same for the same agent, path, size and modification
    // time, so running the upload again continues where it was cut.
    std::string upload_id_for(const std::filesystem::path& file) const;
    // Uploads every file under `folder` as blobs and registers the dataset; returns its id.
    std::string push_dataset(const std::filesystem::path& folder, const std::string& name,
                             const UploadProgressFn& progress = {});

    // Follows a job's events after `after_seq` until the stream ends (job finished) or `stop` is
    // requested (from any thread; it also interrupts a read that waits for bytes). Reconnects
    // with exponential backoff (up to max_backoff) on network errors; `on_event` returns false
    // to stop. Returns the last seq delivered.
    std::int64_t follow_events(const std::string& job_id, std::int64_t after_seq,
                               const std::function<bool(const Event&)>& on_event,
                               StreamStop* stop = nullptr,
                               std::chrono::milliseconds max_backoff = std::chrono::seconds(30));

    // Downloads an artifact to `out`. The bytes go to `<out>.crucible-part` first, next to a
    // `<out>.crucible-part.json` that records where they come from (agent, job, artifact, the
    // agent's ETag); the part becomes `out` only when complete. A later call resumes the part
    // with a Range request only when that record matches and the agent still serves the same
    // file (same ETag); otherwise it starts again from zero. An existing `out` is never written
    // into: it is refused (InputError) unless `overwrite`. `progress(done, total)` is called per
    // piece; returning false stops the download (the part stays for a later resume). Returns
    // the artifact's size.
    std::uint64_t download(
        const std::string& job_id, const std::string& artifact, const std::filesystem::path& out,
        bool overwrite = false,
        const std::function<bool(std::uint64_t done, std::uint64_t total)>& progress = {});

    const RemoteEndpoint& endpoint() const { return endpoint_; }

    // For a process that is closing: ends every call in flight in this process (its connection
    // is shut down, so a read waiting on a stalled agent returns; a connection being made ends
    // when it is made or times out) and makes new calls fail at once (ApiError, unreachable), so
    // no background thread waits out a 60 s read timeout. Returns at once; the work goes on in a
    // thread of its own until the last call has ended. allow_requests() lifts the refusal.
    static void stop_all_requests();
    static void allow_requests();
    static bool requests_stopped();

  private:
    // A connection that this process's registry of calls in flight knows while it lives.
    struct Unregister {
        void operator()(httplib::ClientImpl* client) const;
    };
    using Connection = std::unique_ptr<httplib::ClientImpl, Unregister>;
    Connection connect(std::chrono::seconds read_timeout) const;
    Json check(int status, const std::string& body, const std::string& what) const;

    RemoteEndpoint endpoint_;
    ParsedUrl url_;
};

}  // namespace crucible::net
