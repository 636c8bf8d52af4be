#pragma once
// Every route of the agent's API, defined once: the server registers its handlers with these
// (HttpServer::on) and the client builds its request paths from them (Route::path), so a route
// cannot be spelled differently on the two sides. resources/api/openapi.yaml documents each one
// (tests/agent_cli/openapi_routes_test.cpp checks that against routes::all()).
//
// A pattern is cpp-httplib's regular expression for the path. Its groups are the path
// parameters: `([^/]+)` one segment (a job id, a blob's SHA-256, an upload name), `(.+)` a
// relative path of several segments (an artifact).
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace crucible::net {

enum class HttpMethod { Get, Post, Put, Delete };

// "GET", "POST", ...
const char* method_name(HttpMethod method);

struct Route {
    HttpMethod method;
    std::string_view pattern;

    // The request path with the groups filled in order. Throws InputError naming the parameter
    // when the count is wrong, a one-segment value is empty or holds '/', or any value holds
    // '?', '#', a control character or a ".." segment: a value can never change the route.
    std::string path(std::initializer_list<std::string_view> args = {}) const;
    // "GET /v1/jobs/{id}" style, for messages and the OpenAPI check ("{param}" per group).
    std::string describe() const;
};

namespace routes {

inline constexpr Route kHealth{HttpMethod::Get, "/v1/health"};  // the only one without a token
inline constexpr Route kInfo{HttpMethod::Get, "/v1/info"};
inline constexpr Route kGpus{HttpMethod::Get, "/v1/gpus"};
inline constexpr Route kStream{HttpMethod::Get, "/v1/stream"};  // SSE: every job's state
// Prometheus text format, at the path scrapers look for by default.
inline constexpr Route kMetrics{HttpMethod::Get, "/metrics"};

inline constexpr Route kSubmitJob{HttpMethod::Post, "/v1/jobs"};
inline constexpr Route kListJobs{HttpMethod::Get, "/v1/jobs"};
inline constexpr Route kGetJob{HttpMethod::Get, R"(/v1/jobs/([^/]+))"};
inline constexpr Route kDeleteJob{HttpMethod::Delete, R"(/v1/jobs/([^/]+))"};
inline constexpr Route kCancelJob{HttpMethod::Post, R"(/v1/jobs/([^/]+)/cancel)"};
inline constexpr Route kPauseJob{HttpMethod::Post, R"(/v1/jobs/([^/]+)/pause)"};
inline constexpr Route kResumeJob{HttpMethod::Post, R"(/v1/jobs/([^/]+)/resume)"};
inline constexpr Route kJobEvents{HttpMethod::Get, R"(/v1/jobs/([^/]+)/events)"};  // SSE or JSON
inline constexpr Route kJobArtifacts{HttpMethod::Get, R"(/v1/jobs/([^/]+)/artifacts)"};
inline constexpr Route kJobArtifact{HttpMethod::Get, R"(/v1/jobs/([^/]+)/artifacts/(.+))"};

inline constexpr Route kGetBlob{HttpMethod::Get, R"(/v1/blobs/([^/]+))"};
inline constexpr Route kPutBlob{HttpMethod::Put, R"(/v1/blobs/([^/]+))"};
inline constexpr Route kGetUpload{HttpMethod::Get, R"(/v1/uploads/([^/]+))"};
inline constexpr Route kPutUpload{HttpMethod::Put, R"(/v1/uploads/([^/]+))"};
inline constexpr Route kFinishUpload{HttpMethod::Post, R"(/v1/uploads/([^/]+)/finish)"};
inline constexpr Route kDeleteUpload{HttpMethod::Delete, R"(/v1/uploads/([^/]+))"};
inline constexpr Route kCreateDataset{HttpMethod::Post, "/v1/datasets"};
inline constexpr Route kListDatasets{HttpMethod::Get, "/v1/datasets"};
inline constexpr Route kListFolder{HttpMethod::Get, "/v1/fs"};

// Every route above, in this order.
std::span<const Route> all();

}  // namespace routes
}  // namespace crucible::net
