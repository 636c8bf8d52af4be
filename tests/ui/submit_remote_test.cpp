// Starting from pretrained weights on a remote server: the run setup's model= names a file on
// this computer; submitting to a real crucible-agent (running the fake worker) uploads it and the
// job's spec names the same bytes on the agent, under the same file name. Skips when the
// crucible-agent of this build is absent.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <QLineEdit>
#include <QProcess>
#include <chrono>
#include <fstream>
#include <thread>

#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/net/api_client.h"
#include "core/net/token_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/free_port.h"
#include "tests/ui/qt_test_env.h"
#include "ui/options_form.h"
#include "ui/run_setup.h"
#include "ui/server_access.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

TEST(RunSetup, RemoteSubmitUploadsLocalPretrainedWeights) {
    const QString program = QStringLiteral(CRUCIBLE_BINARY_DIR "/app/agent/crucible-agent");
    if (!QFileInfo(program).isExecutable())
        GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    const auto data = dir / "agent";
    fs::create_directories(data);
    const std::string token = net::TokenStore(data / "tokens.json").create("studio");
    const int port = test_support::free_loopback_port();
    QProcess agent;
    agent.setProcessChannelMode(QProcess::MergedChannels);
    agent.start(program,
                {"--listen", QStringLiteral("127.0.0.1:%1").arg(port), "--data",
                 QString::fromStdString(path_to_utf8(data)), "--worker",
                 QStringLiteral(CRUCIBLE_FAKE_WORKER), "--nvml", "/nonexistent/libnvidia-ml.so.1"});
    ASSERT_TRUE(agent.waitForStarted(10000));
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    Json tasks;
    ASSERT_TRUE(uitest::wait_for(
        [&] {
            try {
                tasks = net::ApiClient({url, token, ""}).get("/v1/info").at("tasks");
                return true;
            } catch (const std::exception&) {
                return false;
            }
        },
        20000))
        << "the agent did not answer: " << agent.readAll().toStdString();

    auto project = store::Project::create(dir / "p.crucible");
    const auto server = add_server(*project, "gpu", url, token, "");
    RunSetupView view(project.get(), tasks);
    view.show();
    ASSERT_TRUE(view.select_task("test.fake"));
    view.select_server(server);
    const auto weights = dir / path_from_utf8("\xe9\xa2\x84\xe8\xae\xad\xe7\xbb\x83 best.pt");
    std::ofstream(weights, std::ios::binary) << std::string(5000, '\x11') << "pt";
    auto* model = qobject_cast<QLineEdit*>(view.form()->editor("model"));
    ASSERT_NE(model, nullptr);
    model->setText(QString::fromStdString(path_to_utf8(weights)));
    std::int64_t submitted = -1;
    QString job, failure;
    QObject::connect(&view, &RunSetupView::run_submitted, [&](std::int64_t id, const QString& j) {
        submitted = id;
        job = j;
    });
    QObject::connect(&view, &RunSetupView::submit_failed, [&](const QString& m) { failure = m; });
    view.submit("pretrained");
    ASSERT_TRUE(uitest::wait_for([&] { return submitted >= 0 || !failure.isEmpty(); }, 30000));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    const Json spec = Json::parse(read_file_bytes(data / "jobs" / job.toStdString() / "spec.json"));
    const auto on_agent = path_from_utf8(spec.at("options").at("model").get<std::string>());
    EXPECT_TRUE(is_path_inside(data / "inputs", on_agent)) << spec.dump();
    EXPECT_EQ(on_agent.filename(), weights.filename());
    EXPECT_EQ(sha256_file(on_agent), sha256_file(weights));
    // The project keeps what the person chose (their own path), not the agent's copy.
    const auto run = store::get_run(*project, submitted);
    EXPECT_EQ(run.setup.options.value("model", std::string()), path_to_utf8(weights));
    agent.terminate();
    agent.waitForFinished(10000);
}
