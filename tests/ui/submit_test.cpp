// Submitting a run from the run setup: the job goes to the chosen server through the core/net
// client with the token from the SecretStore, and the project records the agent's job id; a
// refused submission leaves a draft and says why. Servers keep tokens out of the project.
#include <gtest/gtest.h>

#include <httplib.h>

#include <QPushButton>
#include <QSpinBox>
#include <QTest>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/base/options_schema.h"
#include "core/base/secret_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/loopback_server.h"
#include "tests/ui/qt_test_env.h"
#include "ui/options_form.h"
#include "ui/run_setup.h"
#include "ui/server_access.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

struct FakeAgent {
    std::mutex mutex;
    std::vector<std::pair<std::string, std::string>> jobs;  // authorization, body
    int status = 201;
    int port = 0;
    test_support::LoopbackServer http;  // last: stopped before the members its routes use

    FakeAgent() {
        http.on(net::routes::kSubmitJob, [this](const httplib::Request& req,
                                                httplib::Response& res) {
            std::lock_guard<std::mutex> lock(mutex);
            jobs.emplace_back(req.get_header_value("Authorization"), req.body);
            res.status = status;
            if (status >= 400)
                res.set_content(R"({"error":{"code":"bad_option","message":"epochs: too many"}})",
                                "application/json");
            else
                res.set_content(R"({"id":"job-7","state":"queued"})", "application/json");
        });
        port = http.listen();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

Json schema() {
    OptionSchema s("toy.task", "Toy");
    s.add({"epochs", OptionType::Integer, 10, 1.0, 100.0, {}, "", "train"});
    return Json::array({s.to_json()});
}

}  // namespace

TEST(Servers, OneRegistryWithTheCliTokensInTheSecretStore) {
    uitest::clear_server_registry();
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    add_server("gpu", "http://127.0.0.1:9", "tok-123", "");
    // The studio's servers are the CLI's remotes: the same file, read by net::RemoteConfig.
    const auto registry = net::RemoteConfig::load(net::default_remotes_file());
    ASSERT_EQ(registry.remotes().size(), 1u);
    EXPECT_EQ(registry.remotes()[0].name, "gpu");
    ASSERT_EQ(list_servers().size(), 1u);
    EXPECT_EQ(net::endpoint_for(list_servers()[0]).token, "tok-123");
    EXPECT_EQ(
        SecretStore::open_default()->get(net::remote_secret_key(list_servers()[0])).value_or(""),
        "tok-123");
    // A second entry for the same agent keeps its own token (two users of one agent).
    add_server("gpu-bob", "http://127.0.0.1:9", "tok-bob", "");
    EXPECT_EQ(net::endpoint_for(*find_server("gpu")).token, "tok-123");
    EXPECT_EQ(net::endpoint_for(*find_server("gpu-bob")).token, "tok-bob");
    // A token is changed, and an entry removed, one entry at a time.
    set_server_token("gpu-bob", "tok-bob-2");
    EXPECT_EQ(net::endpoint_for(*find_server("gpu-bob")).token, "tok-bob-2");
    EXPECT_EQ(net::endpoint_for(*find_server("gpu")).token, "tok-123");
    remove_server("gpu-bob");
    EXPECT_FALSE(find_server("gpu-bob").has_value());
    EXPECT_FALSE(net::remote_token({"gpu-bob", "http://127.0.0.1:9", ""}).has_value());
    EXPECT_EQ(net::endpoint_for(*find_server("gpu")).token, "tok-123");
    EXPECT_THROW(remove_server("gpu-bob"), InputError);
    EXPECT_THROW(set_server_token("nobody", "x"), InputError);
    project.reset();
    std::ifstream in(dir / "p.crucible", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(bytes.find("tok-123"), std::string::npos);
    std::ifstream registry_file(net::default_remotes_file(), std::ios::binary);
    const std::string registry_bytes((std::istreambuf_iterator<char>(registry_file)), {});
    EXPECT_EQ(registry_bytes.find("tok-123"), std::string::npos);
    EXPECT_THROW(add_server("bad", "ftp://x", "", ""), InputError);
    EXPECT_THROW(add_server("tls", "https://gpu:7443", "t", ""), InputError);  // no fingerprint
    EXPECT_THROW(add_server("", "http://x:1", "", ""), InputError);
    EXPECT_THROW(add_server("gpu", "http://other:1", "", ""), InputError);  // the name is taken
    EXPECT_THROW(add_server("with space", "http://x:1", "", ""), InputError);
}

TEST(Servers, AnOlderProjectsServersMoveIntoTheRegistryOnce) {
    uitest::clear_server_registry();
    add_server("gpu", "http://127.0.0.1:9", "", "");
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    project->db().exec(
        "INSERT INTO servers(name, url, tls_fingerprint) VALUES"
        "('gpu', 'http://127.0.0.1:9/', ''),"   // the same server: nothing to move
        "('box', 'https://box:7443', 'bad')");  // an https server without a valid pin
    const auto run =
        store::create_run(*project, {.name = "r", .task = "toy.task", .server = "box"});
    auto lines = import_project_servers(*project);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("'box' of the project not moved"), std::string::npos) << lines[0];
    EXPECT_EQ(list_servers().size(), 1u);
    // Refused servers stay in the project for the next try; the moved one left it.
    ASSERT_EQ(store::legacy_servers(*project).size(), 1u);
    EXPECT_EQ(store::legacy_servers(*project)[0].name, "box");

    // A name the registry has for another address: the server comes in as "<name>-2" and the
    // project's runs follow it.
    project->db().exec(
        "DELETE FROM servers; INSERT INTO servers(name, url) VALUES('gpu', 'http://127.0.0.2:9')");
    store::rename_run_server(*project, "box", "gpu");
    lines = import_project_servers(*project);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("as 'gpu-2'"), std::string::npos) << lines[0];
    ASSERT_TRUE(find_server("gpu-2").has_value());
    EXPECT_EQ(find_server("gpu-2")->url, "http://127.0.0.2:9");
    EXPECT_EQ(store::get_run(*project, run).setup.server, "gpu-2");
    EXPECT_TRUE(import_project_servers(*project).empty());  // once
    EXPECT_EQ(list_servers().size(), 2u);
}

TEST(RunSetup, SubmitSendsTheJobAndRecordsItsId) {
    FakeAgent agent;
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("fake", agent.url(), "tok-9", "");
    RunSetupView view(project.get(), schema());
    view.show();
    auto* submit = view.findChild<QPushButton*>("submit");
    ASSERT_NE(submit, nullptr);
    EXPECT_FALSE(submit->isEnabled());  // "This computer" is chosen
    view.select_server("fake");
    ASSERT_TRUE(submit->isEnabled());
    qobject_cast<QSpinBox*>(view.form()->editor("epochs"))->setValue(3);
    std::int64_t submitted = -1;
    QString job;
    QObject::connect(&view, &RunSetupView::run_submitted, [&](std::int64_t id, const QString& j) {
        submitted = id;
        job = j;
    });
    QTest::mouseClick(submit, Qt::LeftButton);
    // While it is under way, a second submit is neither offered nor taken (no double submit).
    EXPECT_FALSE(submit->isEnabled());
    EXPECT_EQ(submit->text(), "Submitting…");
    EXPECT_EQ(view.submit("twice"), -1);
    ASSERT_TRUE(uitest::wait_for([&] { return submitted >= 0; }))
        << view.error_text().toStdString();
    EXPECT_TRUE(submit->isEnabled());
    EXPECT_EQ(job, "job-7");
    const auto run = store::get_run(*project, submitted);
    EXPECT_EQ(run.setup.remote_job_id, "job-7");
    EXPECT_EQ(run.setup.state, "queued");
    EXPECT_EQ(run.setup.server, "fake");
    ASSERT_EQ(agent.jobs.size(), 1u);
    EXPECT_EQ(agent.jobs[0].first, "Bearer tok-9");
    EXPECT_EQ(store::list_runs(*project).size(), 1u);  // the refused second submit made no run
    const Json body = Json::parse(agent.jobs[0].second);
    EXPECT_EQ(body["task"], "toy.task");
    EXPECT_EQ(body["options"]["epochs"], 3);

    // A refusal keeps the run as a draft and shows the agent's reason.
    agent.status = 400;
    QString failure;
    QObject::connect(&view, &RunSetupView::submit_failed, [&](const QString& m) { failure = m; });
    const auto second = view.submit("second");
    ASSERT_GE(second, 0);
    ASSERT_TRUE(uitest::wait_for([&] { return !failure.isEmpty(); }));
    EXPECT_TRUE(failure.contains("epochs: too many")) << failure.toStdString();
    EXPECT_EQ(store::get_run(*project, second).setup.state, "draft");
    EXPECT_TRUE(store::get_run(*project, second).setup.remote_job_id.empty());
}
