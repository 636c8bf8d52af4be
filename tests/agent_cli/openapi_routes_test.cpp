// resources/api/openapi.yaml must document every route the agent registers: the routes are
// read from the source of core/jobs/agent_routes_*.cpp (r.Get/Post/Put/Delete with their path
// patterns; regex groups become {param}) and each method + path must appear in the document.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "core/base/file_io.h"

namespace {

namespace fs = std::filesystem;

struct Route {
    std::string method;  // "get"
    std::string path;    // "/v1/jobs/{param}"
    bool operator==(const Route& o) const { return method == o.method && path == o.path; }
    bool operator<(const Route& o) const {
        return std::tie(method, path) < std::tie(o.method, o.path);
    }
    std::string text() const {
        std::string m = method;
        for (auto& c : m)
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return m + " " + path;
    }
};

// Regex groups of httplib patterns -> {param}.
std::string normalize_pattern(std::string p) {
    static const std::regex group(R"(\([^()]*\))");
    return std::regex_replace(p, group, "{param}");
}

// OpenAPI path templates -> {param}.
std::string normalize_template(std::string p) {
    static const std::regex param(R"(\{[^{}/]+\})");
    return std::regex_replace(p, param, "{param}");
}

std::set<Route> routes_in_source(const std::string& text) {
    // r.Get("/v1/x", ...) or r.Get(R"(/v1/x/([^/]+))", ...), possibly with a line break.
    static const std::regex call(
        R"re(\br\.(Get|Post|Put|Delete|Patch|Options)\(\s*(?:R"\((.*?)\)"|"([^"]*)"))re");
    std::set<Route> out;
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
        std::string method = (*it)[1];
        for (auto& c : method)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string path = (*it)[2].matched ? std::string((*it)[2]) : std::string((*it)[3]);
        out.insert({method, normalize_pattern(path)});
    }
    return out;
}

std::set<Route> routes_in_folder(const fs::path& folder) {
    std::set<Route> all;
    for (const auto& e : fs::directory_iterator(folder)) {
        auto name = e.path().filename().string();
        if (name.rfind("agent_routes_", 0) != 0 || e.path().extension() != ".cpp") continue;
        auto r = routes_in_source(crucible::read_file_bytes(e.path()));
        all.insert(r.begin(), r.end());
    }
    return all;
}

// The method + path pairs documented in an OpenAPI YAML (block style as written in the repo:
// paths at two spaces, operations at four).
std::set<Route> routes_in_openapi(const std::string& yaml) {
    std::set<Route> out;
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

std::vector<std::string> missing(const std::set<Route>& registered, const std::set<Route>& doc) {
    std::vector<std::string> out;
    for (const auto& r : registered)
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

TEST(OpenApiRoutes, ExtractorReadsBothStringForms) {
    auto r = routes_in_source(
        "r.Get(\"/v1/a\", f);\n r.Post(R\"(/v1/b/([^/]+)/x)\", g);\n"
        "r.Get(R\"(/v1/c/([^/]+)/d/(.+))\",\n  h);\n other.Get(\"/v1/no\", f);");
    std::set<Route> expect = {
        {"get", "/v1/a"}, {"post", "/v1/b/{param}/x"}, {"get", "/v1/c/{param}/d/{param}"}};
    EXPECT_EQ(r, expect);
    auto doc = routes_in_openapi(
        "openapi: 3.0.3\npaths:\n  /v1/a:\n    get:\n      x: 1\n  /v1/b/{id}/x:\n    post:\n"
        "components:\n  /v1/z:\n    get:\n");
    std::set<Route> expect_doc = {{"get", "/v1/a"}, {"post", "/v1/b/{param}/x"}};
    EXPECT_EQ(doc, expect_doc);
}

TEST(OpenApiRoutes, EveryRegisteredRouteIsDocumented) {
    auto registered = routes_in_folder(kSource / "core" / "jobs");
    // The agent has at least the routes the issue lists; an empty scan would pass vacuously.
    ASSERT_GE(registered.size(), 18u);
    EXPECT_TRUE(registered.count({"get", "/v1/jobs/{param}/artifacts/{param}"}));
    EXPECT_TRUE(registered.count({"put", "/v1/blobs/{param}"}));
    auto doc = routes_in_openapi(crucible::read_file_bytes(kSource / "resources/api/openapi.yaml"));
    auto miss = missing(registered, doc);
    EXPECT_TRUE(miss.empty()) << "routes missing from resources/api/openapi.yaml:\n" << join(miss);
}

TEST(OpenApiRoutes, APlantedRouteOrADroppedPathIsReported) {
    auto tmp = fs::temp_directory_path() / "crucible_openapi_plant";
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    for (const auto& e : fs::directory_iterator(kSource / "core" / "jobs"))
        if (e.path().filename().string().rfind("agent_routes_", 0) == 0)
            fs::copy_file(e.path(), tmp / e.path().filename());
    {
        std::ofstream extra(tmp / "agent_routes_jobs.cpp", std::ios::app);
        extra << "\nvoid planted(httplib::Server& r) {\n"
                 "    r.Post(R\"(/v1/jobs/([^/]+)/planted)\", [](auto&, auto&) {});\n}\n";
    }
    const std::string yaml = crucible::read_file_bytes(kSource / "resources/api/openapi.yaml");
    auto miss = missing(routes_in_folder(tmp), routes_in_openapi(yaml));
    ASSERT_EQ(miss.size(), 1u) << join(miss);
    EXPECT_EQ(miss[0], "POST /v1/jobs/{param}/planted");

    // Dropping the /v1/gpus entry from the document is reported too.
    std::string cut = yaml;
    auto at = cut.find("\n  /v1/gpus:");
    ASSERT_NE(at, std::string::npos);
    cut.replace(at, std::string("\n  /v1/gpus:").size(), "\n  /v1/gpus-renamed:");
    auto miss2 = missing(routes_in_folder(kSource / "core" / "jobs"), routes_in_openapi(cut));
    ASSERT_EQ(miss2.size(), 1u) << join(miss2);
    EXPECT_EQ(miss2[0], "GET /v1/gpus");
    fs::remove_all(tmp);
}
