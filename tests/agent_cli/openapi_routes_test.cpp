// The agent's routes are defined once, in core/net/api_routes.h. Here: every route of that table
// is documented in resources/api/openapi.yaml, every route is served by the agent (each name in
// the table has its `server.on(net::routes::kName, ...)` in core/jobs/agent_routes_*.cpp, and
// nothing else is registered there), and Route::path() fills patterns safely.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/net/api_routes.h"

namespace {

namespace fs = std::filesystem;
namespace routes = crucible::net::routes;
using crucible::net::Route;

struct DocRoute {
    std::string method;  // "get"
    std::string path;    // "/v1/jobs/{param}"
    bool operator==(const DocRoute& o) const { return method == o.method && path == o.path; }
    bool operator<(const DocRoute& o) const {
        return std::tie(method, path) < std::tie(o.method, o.path);
    }
    std::string text() const {
        std::string m = method;
        for (auto& c : m)
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return m + " " + path;
    }
};

// "GET /v1/jobs/{param}" (Route::describe) -> {"get", "/v1/jobs/{param}"}.
DocRoute from_table(const Route& route) {
    const std::string d = route.describe();
    DocRoute r{d.substr(0, d.find(' ')), d.substr(d.find(' ') + 1)};
    for (auto& c : r.method)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

std::set<DocRoute> table_routes() {
    std::set<DocRoute> out;
    for (const Route& r : routes::all())
        out.insert(from_table(r));
    return out;
}

// The names after `matcher` in `text` (a source file).
std::set<std::string> names_in(const std::string& text, const std::regex& matcher) {
    std::set<std::string> out;
    for (std::sregex_iterator it(text.begin(), text.end(), matcher), end; it != end; ++it)
        out.insert((*it)[1]);
    return out;
}

const std::regex kServedRoute(R"(\bserver\.on\(\s*net::routes::(k\w+))");
const std::regex kDefinedRoute(R"(inline constexpr Route (k\w+)\{)");

std::set<std::string> served_in_folder(const fs::path& folder) {
    std::set<std::string> all;
    for (const auto& e : fs::directory_iterator(folder)) {
        auto name = e.path().filename().string();
        if (name.rfind("agent_routes_", 0) != 0 || e.path().extension() != ".cpp") continue;
        auto r = names_in(crucible::read_file_bytes(e.path()), kServedRoute);
        all.insert(r.begin(), r.end());
    }
    return all;
}

// OpenAPI path templates -> {param}.
std::string normalize_template(std::string p) {
    static const std::regex param(R"(\{[^{}/]+\})");
    return std::regex_replace(p, param, "{param}");
}

// The method + path pairs documented in an OpenAPI YAML (block style as written in the repo:
// paths at two spaces, operations at four).
std::set<DocRoute> routes_in_openapi(const std::string& yaml) {
    std::set<DocRoute> out;
    std::istringstream in(yaml);
    std::string line, current;
    bool in_paths = false;
    static const std::regex path_line(R"(^  (/[^:\s]*):\s*$)");
    static const std::regex op_line(R"(^    (get|put|post|delete|head|patch|options):\s*$)");
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("paths:", 0) == 0) {
            in_paths = true;
            continue;
        }
        if (!line.empty() && line[0] != ' ' && line[0] != '#') in_paths = false;
        if (!in_paths) continue;
        std::smatch m;
        if (std::regex_match(line, m, path_line))
            current = normalize_template(m[1]);
        else if (!current.empty() && std::regex_match(line, m, op_line))
            out.insert({m[1], current});
    }
    return out;
}

std::vector<std::string> missing(const std::set<DocRoute>& wanted, const std::set<DocRoute>& doc) {
    std::vector<std::string> out;
    for (const auto& r : wanted)
        if (!doc.count(r)) out.push_back(r.text());
    return out;
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v)
        s += "  " + x + "\n";
    return s;
}

const fs::path kSource = CRUCIBLE_SOURCE_DIR;

}  // namespace

TEST(OpenApiRoutes, TheDocumentReaderFindsPathsAndOperations) {
    auto doc = routes_in_openapi(
        "openapi: 3.0.3\npaths:\n  /v1/a:\n    get:\n      x: 1\n  /v1/b/{id}/x:\n    post:\n"
        "components:\n  /v1/z:\n    get:\n");
    std::set<DocRoute> expect_doc = {{"get", "/v1/a"}, {"post", "/v1/b/{param}/x"}};
    EXPECT_EQ(doc, expect_doc);
}

TEST(OpenApiRoutes, EveryRouteIsDocumented) {
    const auto table = table_routes();
    // The agent has at least these; an empty table would pass vacuously.
    ASSERT_GE(table.size(), 23u);
    EXPECT_TRUE(table.count({"get", "/v1/jobs/{param}/artifacts/{param}"}));
    EXPECT_TRUE(table.count({"put", "/v1/blobs/{param}"}));
    auto doc = routes_in_openapi(crucible::read_file_bytes(kSource / "resources/api/openapi.yaml"));
    auto miss = missing(table, doc);
    EXPECT_TRUE(miss.empty()) << "routes missing from resources/api/openapi.yaml:\n" << join(miss);

    // Dropping the /v1/gpus entry from the document is reported.
    std::string cut = crucible::read_file_bytes(kSource / "resources/api/openapi.yaml");
    auto at = cut.find("\n  /v1/gpus:");
    ASSERT_NE(at, std::string::npos);
    cut.replace(at, std::string("\n  /v1/gpus:").size(), "\n  /v1/gpus-renamed:");
    auto miss2 = missing(table, routes_in_openapi(cut));
    ASSERT_EQ(miss2.size(), 1u) << join(miss2);
    EXPECT_EQ(miss2[0], "GET /v1/gpus");
}

TEST(OpenApiRoutes, TheAgentServesEveryRouteOfTheTableAndNoOther) {
    const auto defined =
        names_in(crucible::read_file_bytes(kSource / "core/net/api_routes.h"), kDefinedRoute);
    ASSERT_EQ(defined.size(), routes::all().size()) << "routes::all() misses a defined route";
    const auto served = served_in_folder(kSource / "core" / "jobs");
    EXPECT_EQ(served, defined);
    // A route string registered by hand, past the table, would escape that comparison.
    for (const auto& e : fs::directory_iterator(kSource / "core" / "jobs")) {
        const std::string text = crucible::read_file_bytes(e.path());
        EXPECT_EQ(text.find("\"/v1/"), std::string::npos) << e.path() << " spells a route";
        EXPECT_EQ(text.find("R\"(/v1/"), std::string::npos) << e.path() << " spells a route";
    }
    // The scan sees a planted registration.
    EXPECT_EQ(names_in("server.on(net::routes::kPlanted, f);", kServedRoute),
              std::set<std::string>{"kPlanted"});
}

TEST(ApiRoutes, PathsFillThePatternAndMatchIt) {
    EXPECT_EQ(routes::kListJobs.path(), "/v1/jobs");
    EXPECT_EQ(routes::kCancelJob.path({"j20261202-1"}), "/v1/jobs/j20261202-1/cancel");
    EXPECT_EQ(routes::kJobArtifact.path({"j1", "artifacts/weights/best.safetensors"}),
              "/v1/jobs/j1/artifacts/artifacts/weights/best.safetensors");
    EXPECT_EQ(routes::kGetJob.describe(), "GET /v1/jobs/{param}");
    // Every route: a path made from sample values is matched by its own pattern.
    for (const Route& r : routes::all()) {
        const std::string pattern(r.pattern);
        const auto groups =
            static_cast<std::size_t>(std::count(pattern.begin(), pattern.end(), '('));
        std::string path;
        if (groups == 0) path = r.path();
        if (groups == 1) path = r.path({"a1"});
        if (groups == 2) path = r.path({"a1", "b/c.png"});
        EXPECT_TRUE(std::regex_match(path, std::regex(pattern))) << r.describe() << " " << path;
    }
}

TEST(ApiRoutes, HostileValuesCannotChangeTheRoute) {
    const std::vector<std::string> bad_ids = {"",      "a/b", "..",   ".",
                                              "a?x=1", "a#b", "a\nb", std::string("a\0b", 3)};
    for (const auto& id : bad_ids)
        EXPECT_THROW(routes::kGetJob.path({id}), crucible::InputError) << id;
    const std::vector<std::string> bad_paths = {"../spec.json", "a/../../x", "a//b", "/abs",
                                                "a/",           "x?y",       "a/./b"};
    for (const auto& p : bad_paths)
        EXPECT_THROW(routes::kJobArtifact.path({"j1", p}), crucible::InputError) << p;
    // Chinese and other non-ASCII names are fine (the client percent-encodes them on the wire).
    EXPECT_EQ(routes::kJobArtifact.path({"j1", "样本/图.png"}),
              "/v1/jobs/j1/artifacts/样本/图.png");
    EXPECT_THROW(routes::kGetJob.path(), crucible::InputError);
    EXPECT_THROW(routes::kListJobs.path({"x"}), crucible::InputError);
}
