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
#include "tests/ui/qt_test_env.h"
#include "ui/options_form.h"
#include "ui/run_setup.h"
#include "ui/server_access.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

struct FakeAgent {
    httplib::Server server;
    std::thread thread;
    std::mutex mutex;
    std::vector<std::pair<std::string, std::string>> jobs;  // authorization, body
    int status = 201;
    int port = 0;

    FakeAgent() {
        server.Post("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
            std::lock_guard<std::mutex> lock(mutex);
            jobs.emplace_back(req.get_header_value("Authorization"), req.body);
            res.status = status;
            if (status >= 400)
                res.set_content(R"({"error":{"code":"bad_option","message":"epochs: too many"}})",
                                "application/json");
            else
                res.set_content(R"({"id":"job-7","state":"queued"})", "application/json");
        });
        port = server.bind_to_any_port("127.0.0.1");
        thread = std::thread([this] { server.listen_after_bind(); });
    }
    ~FakeAgent() {
        server.stop();
        thread.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

Json schema() {
    OptionSchema s("toy.task", "Toy");
    s.add({"epochs", OptionType::Integer, 10, 1.0, 100.0, {}, "", "train"});
    return Json::array({s.to_json()});
}

}  // namespace

TEST(Servers, TokensGoToTheSecretStoreNotTheProject) {
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    const auto id = add_server(*project, "gpu", "http://127.0.0.1:9", "tok-123", "");
    const auto servers = store::list_servers(*project);
    ASSERT_EQ(servers.size(), 1u);
    EXPECT_EQ(servers[0].id, id);
    EXPECT_EQ(endpoint_for(servers[0]).token, "tok-123");
    EXPECT_EQ(SecretStore::open_default()->get("agent:http://127.0.0.1:9").value_or(""), "tok-123");
    project.reset();
    std::ifstream in(dir / "p.crucible", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(bytes.find("tok-123"), std::string::npos);
    auto reopened = store::Project::open(dir / "p.crucible");
    EXPECT_THROW(add_server(*reopened, "bad", "ftp://x", "", ""), InputError);
    EXPECT_THROW(add_server(*reopened, "tls", "https://gpu:7443", "t", ""), InputError);
    EXPECT_THROW(add_server(*reopened, "", "http://x:1", "", ""), InputError);
}

TEST(RunSetup, SubmitSendsTheJobAndRecordsItsId) {
    FakeAgent agent;
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    const auto server = add_server(*project, "fake", agent.url(), "tok-9", "");
    RunSetupView view(project.get(), schema());
    view.show();
    auto* submit = view.findChild<QPushButton*>("submit");
    ASSERT_NE(submit, nullptr);
    EXPECT_FALSE(submit->isEnabled());  // "This computer" is chosen
    view.select_server(server);
    ASSERT_TRUE(submit->isEnabled());
    qobject_cast<QSpinBox*>(view.form()->editor("epochs"))->setValue(3);
    std::int64_t submitted = -1;
    QString job;
    QObject::connect(&view, &RunSetupView::run_submitted, [&](std::int64_t id, const QString& j) {
        submitted = id;
        job = j;
    });
    QTest::mouseClick(submit, Qt::LeftButton);
    ASSERT_TRUE(uitest::wait_for([&] { return submitted >= 0; }))
        << view.error_text().toStdString();
    EXPECT_EQ(job, "job-7");
    const auto run = store::get_run(*project, submitted);
    EXPECT_EQ(run.setup.remote_job_id, "job-7");
    EXPECT_EQ(run.setup.state, "queued");
    ASSERT_TRUE(run.setup.server_id.has_value());
    EXPECT_EQ(*run.setup.server_id, server);
    ASSERT_EQ(agent.jobs.size(), 1u);
    EXPECT_EQ(agent.jobs[0].first, "Bearer tok-9");
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
