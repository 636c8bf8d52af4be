#include "core/net/api_routes.h"

#include <array>

#include "core/base/error.h"

namespace crucible::net {
namespace {

constexpr std::string_view kOneSegment = "([^/]+)";
constexpr std::string_view kManySegments = "(.+)";

// Checks one parameter value; `many` allows '/' between segments.
void check_value(std::string_view value, bool many, const Route& route) {
    const auto refuse = [&](const char* why) {
        throw InputError("path parameter", "'" + std::string(value) + "' cannot go into " +
                                               route.describe() + ": " + why);
    };
    if (value.empty()) refuse("it is empty");
    for (unsigned char c : value) {
        if (c < 0x20 || c == 0x7f) refuse("it holds a control character");
        if (c == '?' || c == '#') refuse("it holds '?' or '#'");
        if (c == '/' && !many) refuse("it holds '/'");
    }
    std::size_t start = 0;
    while (start <= value.size()) {
        const std::size_t end = std::min(value.find('/', start), value.size());
        const std::string_view segment = value.substr(start, end - start);
        if (segment == ".." || segment == ".") refuse("it names '.' or '..'");
        if (segment.empty()) refuse("it has an empty segment");
        start = end + 1;
    }
}

}  // namespace

const char* method_name(HttpMethod method) {
    switch (method) {
        case HttpMethod::Get:
            return "GET";
        case HttpMethod::Post:
            return "POST";
        case HttpMethod::Put:
            return "PUT";
        case HttpMethod::Delete:
            return "DELETE";
    }
    return "?";
}

std::string Route::path(std::initializer_list<std::string_view> args) const {
    std::string out;
    auto arg = args.begin();
    std::size_t i = 0;
    while (i < pattern.size()) {
        const bool one = pattern.compare(i, kOneSegment.size(), kOneSegment) == 0;
        const bool many = !one && pattern.compare(i, kManySegments.size(), kManySegments) == 0;
        if (!one && !many) {
            out += pattern[i++];
            continue;
        }
        if (arg == args.end())
            throw InputError("path parameter", describe() + " needs more parameters");
        check_value(*arg, many, *this);
        out += *arg++;
        i += one ? kOneSegment.size() : kManySegments.size();
    }
    if (arg != args.end())
        throw InputError("path parameter", describe() + " takes fewer parameters");
    return out;
}

std::string Route::describe() const {
    std::string out = std::string(method_name(method)) + " ";
    for (std::size_t i = 0; i < pattern.size();) {
        if (pattern.compare(i, kOneSegment.size(), kOneSegment) == 0) {
            out += "{param}";
            i += kOneSegment.size();
        } else if (pattern.compare(i, kManySegments.size(), kManySegments) == 0) {
            out += "{param}";
            i += kManySegments.size();
        } else {
            out += pattern[i++];
        }
    }
    return out;
}

namespace routes {

std::span<const Route> all() {
    static constexpr std::array kAll{
        kHealth,    kInfo,         kGpus,         kStream,        kMetrics,      kSubmitJob,
        kListJobs,  kGetJob,       kDeleteJob,    kCancelJob,     kPauseJob,     kResumeJob,
        kJobEvents, kJobArtifacts, kJobArtifact,  kGetBlob,       kPutBlob,      kGetUpload,
        kPutUpload, kFinishUpload, kDeleteUpload, kCreateDataset, kListDatasets, kListFolder,
    };
    return kAll;
}

}  // namespace routes
}  // namespace crucible::net
