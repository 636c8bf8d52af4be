// Starting from pretrained weights on a remote server: the run setup's model= names a file on
// this computer; submitting to a real crucible-agent (running the fake worker) uploads it and the
// job's spec names the same bytes on the agent, under the same file name. Skips when the
// crucible-agent of this build is absent.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QRegularExpression>
#include <chrono>
#include <fstream>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/net/api_client.h"
#include "core/net/token_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/built_programs.h"
#include "tests/support/free_port.h"
#include "tests/ui/qt_test_env.h"
#include "ui/main_window.h"
#include "ui/options_form.h"
#include "ui/peer_picker.h"
#include "ui/run_setup.h"
#include "ui/server_access.h"
#include "ui/server_file_dialog.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

namespace {

// A real crucible-agent on loopback with the fake worker, a fresh token, and `roots` shared.
struct RealAgent {
    QProcess process;
    std::string url, token;
    Json tasks;
    bool start(const fs::path& data, const std::vector<fs::path>& roots = {},
               const Json& cluster = Json()) {
        const QString program = QString::fromStdString(crucible::path_to_utf8(
            crucible::test_support::built_program("crucible-agent", "app/agent")));
        fs::create_directories(data);
        token = net::TokenStore(data / "tokens.json").create("studio");
        Json shared = Json::array();
        for (const auto& r : roots)
            shared.push_back(path_to_utf8(r));
        Json config = {{"roots", shared}};
        if (!cluster.is_null()) config["cluster"] = cluster;
        write_file_atomically(data / "agent.json", config.dump());
        const int port = test_support::free_loopback_port();
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.start(program, {"--listen", QStringLiteral("127.0.0.1:%1").arg(port), "--data",
                                QString::fromStdString(path_to_utf8(data)), "--worker",
                                QStringLiteral(CRUCIBLE_FAKE_WORKER), "--nvml",
                                "/nonexistent/libnvidia-ml.so.1"});
        if (!process.waitForStarted(10000)) return false;
        url = "http://127.0.0.1:" + std::to_string(port);
        return uitest::wait_for(
            [&] {
                try {
                    tasks = net::ApiClient({url, token, ""}).get("/v1/info").at("tasks");
                    return true;
                } catch (const std::exception&) {
                    return false;
                }
            },
            20000);
    }
    ~RealAgent() {
        process.terminate();
        process.waitForFinished(10000);
    }
};

bool agent_built() {
    return QFileInfo(QString::fromStdString(crucible::path_to_utf8(
                         crucible::test_support::built_program("crucible-agent", "app/agent"))))
        .isExecutable();
}

}  // namespace

TEST(RunSetup, RemoteSubmitUploadsLocalPretrainedWeights) {
    if (!agent_built()) GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    const auto data = dir / "agent";
    RealAgent agent;
    ASSERT_TRUE(agent.start(data)) << agent.process.readAll().toStdString();
    const std::string url = agent.url;
    const std::string token = agent.token;
    const Json tasks = agent.tasks;
    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("gpu", url, token, "");
    RunSetupView view(project.get(), tasks);
    view.show();
    ASSERT_TRUE(view.select_task("test.fake"));
    view.select_server("gpu");
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
}

// A server whose agent has peers offers them in the run setup; a ticked peer goes into the
// submit's `servers`, so the agent makes the run one over both servers (here the peer cannot be
// reached, and the agent says so in the run's events).
TEST(RunSetup, PeersOfTheServerCanTakeRanksOfTheRun) {
    if (!agent_built()) GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    const int store_port = test_support::free_loopback_port();
    const Json cluster = {{"host", "127.0.0.1"},
                          {"ports", {store_port, store_port}},
                          {"peers",
                           {{{"name", "b"}, {"url", "http://127.0.0.2:9"}, {"token", "crt_b"}},
                            {{"name", "\xe8\xae\xad\xe7\xbb\x83-c"},
                             {"url", "http://127.0.0.3:9"},
                             {"token", "crt_c"}}}}};
    RealAgent agent;
    ASSERT_TRUE(agent.start(dir / "agent", {}, cluster)) << agent.process.readAll().toStdString();
    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("gpu", agent.url, agent.token, "");
    RunSetupView view(project.get(), agent.tasks);
    view.show();
    ASSERT_TRUE(view.select_task("test.fake"));
    EXPECT_FALSE(view.peer_picker()->isVisible()) << "this computer's agent has no peers";
    view.select_server("gpu");
    ASSERT_TRUE(uitest::wait_for([&] { return view.peer_picker()->isVisible(); }, 10000));
    EXPECT_EQ(view.peer_picker()->peers(),
              (QStringList{"b", QString::fromUtf8("\xe8\xae\xad\xe7\xbb\x83-c")}));
    view.peer_picker()->choose({"b"});
    std::int64_t submitted = -1;
    QString job, failure;
    QObject::connect(&view, &RunSetupView::run_submitted, [&](std::int64_t id, const QString& j) {
        submitted = id;
        job = j;
    });
    QObject::connect(&view, &RunSetupView::submit_failed, [&](const QString& m) { failure = m; });
    view.submit("two servers");
    ASSERT_TRUE(uitest::wait_for([&] { return submitted >= 0 || !failure.isEmpty(); }, 30000));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    const net::JobInfo info = net::ApiClient({agent.url, agent.token, ""}).job(job.toStdString());
    ASSERT_EQ(info.parts.size(), 1u);
    EXPECT_EQ(info.parts[0].server, "b");
    // The project keeps the peers, and a clone ticks them again once the agent lists them.
    const store::RunSetup stored = store::get_run(*project, submitted).setup;
    EXPECT_EQ(stored.peers, std::vector<std::string>{"b"});
    RunSetupView clone(project.get(), agent.tasks);
    clone.show();
    ASSERT_TRUE(clone.load_setup(stored, "two servers (clone)"));
    ASSERT_TRUE(uitest::wait_for([&] { return clone.peer_picker()->isVisible(); }, 10000));
    EXPECT_EQ(clone.peer_picker()->chosen(), QStringList{"b"});
    EXPECT_EQ(clone.peer_picker()->submit_servers().size(), 1u);
    // Back to "This computer": no peers offered.
    view.select_server("");
    EXPECT_FALSE(view.peer_picker()->isVisible());
}

// Weights that already live on the server are picked there: the dialog walks the agent's shared
// folders (a Chinese folder name included) and returns the server path; the run setup offers it
// only while a remote server is chosen.
TEST(RunSetup, ServerFilePickerWalksTheSharedFolders) {
    if (!agent_built()) GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    const auto shared = dir / "models";
    const auto sub = shared / path_from_utf8("\xe6\x9d\x83\xe9\x87\x8d");  // 权重
    fs::create_directories(sub);
    std::ofstream(sub / "best.pt", std::ios::binary) << "pt";
    RealAgent agent;
    ASSERT_TRUE(agent.start(dir / "agent", {shared})) << agent.process.readAll().toStdString();
    const net::RemoteEndpoint endpoint{agent.url, agent.token, ""};

    ServerFileDialog dialog(endpoint);
    bool listed = false;
    QObject::connect(&dialog, &ServerFileDialog::listed, [&] { listed = true; });
    auto wait_listing = [&] {
        const bool ok = uitest::wait_for([&] { return listed; }, 10000);
        listed = false;
        return ok;
    };
    ASSERT_TRUE(wait_listing());
    const QString root = QString::fromStdString(path_to_utf8(shared)) + "/";
    ASSERT_EQ(dialog.entry_names(), QStringList{root});
    dialog.choose(root);
    ASSERT_TRUE(wait_listing());
    const QString folder = QString::fromUtf8("\xe6\x9d\x83\xe9\x87\x8d/");
    EXPECT_EQ(dialog.entry_names(), (QStringList{"../", folder}));
    dialog.choose(folder);
    ASSERT_TRUE(wait_listing());
    EXPECT_EQ(dialog.entry_names(), (QStringList{"../", "best.pt"}));
    dialog.choose("../");  // back up, then down again
    ASSERT_TRUE(wait_listing());
    EXPECT_EQ(dialog.folder().toStdString(), path_to_utf8(shared));
    dialog.choose(folder);
    ASSERT_TRUE(wait_listing());
    dialog.choose("best.pt");
    EXPECT_EQ(dialog.result(), QDialog::Accepted);
    EXPECT_EQ(dialog.selected_path().toStdString(), path_to_utf8(sub / "best.pt"));

    // A folder outside the shared roots is refused by the agent and the dialog says so.
    ServerFileDialog outside(endpoint);
    QObject::connect(&outside, &ServerFileDialog::listed, [&] { listed = true; });
    ASSERT_TRUE(wait_listing());
    outside.open_folder(QString::fromStdString(path_to_utf8(dir)));
    ASSERT_TRUE(wait_listing());
    EXPECT_TRUE(outside.findChild<QLabel*>("error")->text().contains("roots"))
        << outside.findChild<QLabel*>("error")->text().toStdString();

    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("gpu", agent.url, agent.token, "");
    RunSetupView view(project.get(), agent.tasks);
    ASSERT_TRUE(view.select_task("test.fake"));
    EXPECT_FALSE(view.form()->has_server_browser());  // "This computer"
    view.select_server("gpu");
    EXPECT_TRUE(view.form()->has_server_browser());
}

// A large upload shows its bytes, rate and ETA; Cancel stops it (the run is a draft again) and
// the next Submit continues the upload where it stopped instead of from byte 0.
TEST(RunSetup, UploadShowsProgressCancelsAndResumes) {
    if (!agent_built()) GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    RealAgent agent;
    ASSERT_TRUE(agent.start(dir / "agent")) << agent.process.readAll().toStdString();
    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("gpu", agent.url, agent.token, "");
    RunSetupView view(project.get(), agent.tasks);
    view.show();
    ASSERT_TRUE(view.select_task("test.fake"));
    view.select_server("gpu");
    const auto weights = dir / "big.pt";
    {
        std::ofstream out(weights, std::ios::binary);
        std::string block(1 << 20, '\0');
        for (int i = 0; i < 160; ++i) {  // 160 MiB in 16 MiB pieces: ten progress steps
            block[static_cast<std::size_t>(i)] = static_cast<char>(i);
            out << block;
        }
    }
    qobject_cast<QLineEdit*>(view.form()->editor("model"))
        ->setText(QString::fromStdString(path_to_utf8(weights)));
    std::int64_t submitted = -1;
    QString failure;
    QObject::connect(&view, &RunSetupView::run_submitted,
                     [&](std::int64_t id, const QString&) { submitted = id; });
    QObject::connect(&view, &RunSetupView::submit_failed, [&](const QString& m) { failure = m; });
    // The MB already there when the upload's first progress shows.
    auto first_shown_mb = [&] {
        double mb = -1;
        uitest::wait_for(
            [&] {
                const auto m =
                    QRegularExpression(": ([0-9.]+) / ([0-9.]+) MB").match(view.upload_text());
                if (m.hasMatch()) mb = m.captured(1).toDouble();
                return m.hasMatch() || submitted >= 0 || !failure.isEmpty();
            },
            30000);
        return mb;
    };

    const auto first_run = view.submit("big");
    ASSERT_GE(first_run, 0) << view.error_text().toStdString();
    EXPECT_GT(first_shown_mb(), 0.0) << "no progress shown";
    // The file, bytes of the whole upload (160 MiB) and files done.
    EXPECT_TRUE(view.upload_text().startsWith("uploading big.pt: "))
        << view.upload_text().toStdString();
    EXPECT_TRUE(view.upload_text().contains("/ 167.8 MB")) << view.upload_text().toStdString();
    EXPECT_TRUE(view.upload_text().endsWith("0/1 files")) << view.upload_text().toStdString();
    view.cancel_upload();
    ASSERT_TRUE(uitest::wait_for([&] { return submitted >= 0 || !failure.isEmpty(); }, 30000));
    ASSERT_LT(submitted, 0) << "the upload ended before the cancel reached it";
    EXPECT_TRUE(failure.contains("canceled")) << failure.toStdString();
    EXPECT_TRUE(view.error_text().contains("continues")) << view.error_text().toStdString();
    EXPECT_EQ(store::get_run(*project, first_run).setup.state, "draft");
    EXPECT_TRUE(view.upload_text().isEmpty());

    failure.clear();
    view.submit("big again");
    const double resumed_at = first_shown_mb();
    EXPECT_GT(resumed_at, 20.0) << "the upload started again from the beginning";
    ASSERT_TRUE(uitest::wait_for([&] { return submitted >= 0 || !failure.isEmpty(); }, 60000));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
}

// The status bar shows every server checked, each with its own state: two entries for one agent,
// one with a wrong token, read "connected" and "invalid token", and the wrong one does not lock
// the right one out.
TEST(MainWindowServers, StatusBarTellsEachServersState) {
    if (!agent_built()) GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    RealAgent agent;
    ASSERT_TRUE(agent.start(dir / "agent")) << agent.process.readAll().toStdString();
    uitest::clear_server_registry();
    add_server("mine", agent.url, agent.token, "");
    add_server("stale", agent.url, "not-the-token", "");
    MainWindow window;
    window.show();
    for (int round = 0; round < 3; ++round) {  // a wrong token again and again
        window.check_server("stale");
        window.check_server("mine");
        ASSERT_TRUE(uitest::wait_for(
            [&] {
                const QString s = window.status_text();
                return s.contains("mine: connected") && s.contains("stale: invalid token");
            },
            10000))
            << window.status_text().toStdString();
    }
}

// A server that moved: Change URL keeps the entry's name and token, and the entry reaches the
// agent at its new address; a bad URL leaves the entry as it was.
TEST(MainWindowServers, ChangeUrlKeepsNameAndToken) {
    if (!agent_built()) GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    RealAgent agent;
    ASSERT_TRUE(agent.start(dir / "agent")) << agent.process.readAll().toStdString();
    uitest::clear_server_registry();
    add_server("gpu", "http://127.0.0.1:9", agent.token, "");  // where it used to be
    change_server_url("gpu", agent.url, "");
    const auto moved = find_server("gpu");
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->url, agent.url);
    EXPECT_EQ(net::remote_token(*moved).value_or(""), agent.token);
    MainWindow window;
    window.check_server("gpu");
    EXPECT_TRUE(
        uitest::wait_for([&] { return window.status_text().contains("gpu: connected"); }, 10000))
        << window.status_text().toStdString();
    EXPECT_THROW(change_server_url("gpu", "ftp://nowhere", ""), InputError);
    EXPECT_EQ(find_server("gpu")->url, agent.url);
    EXPECT_THROW(change_server_url("nobody", agent.url, ""), InputError);
}
