// Closing the studio with a run training on this computer: "Keep training" leaves the private
// agent and its job running; a studio opened afterwards adopts the agent, and the monitor of the
// run continues its curves to the end without the run being reopened by hand. "Pause them"
// pauses the job. Uses the real crucible-agent with the agent tests' fake worker.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <QMessageBox>
#include <QTabWidget>

#include "core/base/file_io.h"
#include "core/base/job_state.h"
#include "core/net/api_client.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/built_programs.h"
#include "tests/ui/qt_test_env.h"
#include "ui/local_agent.h"
#include "ui/main_window.h"
#include "ui/run_files.h"
#include "ui/run_monitor.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

const QString kAgent = QString::fromStdString(
    crucible::path_to_utf8(crucible::test_support::built_program("crucible-agent", "app/agent")));

struct LocalRun {
    std::filesystem::path dir = uitest::temp_dir();
    std::filesystem::path project_file = dir / "p.crucible";
    QString agent_data = QString::fromStdString(path_to_utf8(dir / "agent"));
    std::int64_t run_id = 0;

    LocalAgent* make_agent() const {
        auto* agent = new LocalAgent(kAgent, agent_data, QStringLiteral(CRUCIBLE_FAKE_WORKER),
                                     nullptr, {"--nvml", "/nonexistent/libnvidia-ml.so.1"});
        agent->set_idle_exit(5);  // ends soon after the test
        return agent;
    }
    // A window on the project with this computer's agent up.
    std::unique_ptr<MainWindow> open_window() const {
        auto window = std::make_unique<MainWindow>();
        window->set_local_agent(make_agent());
        window->show();
        EXPECT_TRUE(window->open_project(QString::fromStdString(path_to_utf8(project_file))));
        return window;
    }
    // Submits a slow fake job (steps × delay) to the agent and records it as the project's run.
    void submit(MainWindow& window, int steps, int delay_ms) {
        net::SubmitRequest request;
        request.task = "test.fake";
        request.options = {{"steps", steps}, {"delay_ms", delay_ms}};
        const auto job = net::ApiClient(window.local_agent()->endpoint()).submit(request);
        run_id = store::create_run(*window.project(), {.name = "local", .task = "test.fake"});
        store::update_run_state(*window.project(), run_id, "queued", job.id);
    }
};

std::int64_t last_step(RunMonitor* monitor) {
    const Series* loss = monitor->series(0).find("train/loss");
    return loss && loss->size() > 0 ? static_cast<std::int64_t>(loss->step.back()) : -1;
}

}  // namespace

TEST(CloseReopen, KeepTrainingThenReopenContinuesTheCurves) {
    if (!QFileInfo(kAgent).isExecutable()) GTEST_SKIP() << "crucible-agent not built";
    LocalRun fx;
    { store::Project::create(fx.project_file); }
    auto first = fx.open_window();
    first->start_local_agent();
    ASSERT_TRUE(uitest::wait_for([&] { return first->local_agent()->ready(); }, 30000));
    fx.submit(*first, 60, 100);  // ~6 s of training
    RunMonitor* monitor = first->open_run(fx.run_id);
    ASSERT_NE(monitor, nullptr);
    ASSERT_TRUE(uitest::wait_for([&] { return last_step(monitor) >= 5; }, 20000));
    const auto url = first->local_agent()->endpoint().url;

    uitest::answer_next_message_box(QMessageBox::Yes);  // "Keep training"
    EXPECT_TRUE(first->close());
    first.reset();
    // The job trains on without a studio.
    const std::int64_t kept =
        store::get_run(*store::Project::open_for_reading(fx.project_file), fx.run_id).last_seq;

    auto second = fx.open_window();
    RunMonitor* again = second->open_run(fx.run_id);  // starts the agent on demand: adopts it
    ASSERT_NE(again, nullptr);
    ASSERT_TRUE(uitest::wait_for([&] { return second->local_agent()->ready(); }, 30000));
    EXPECT_TRUE(second->local_agent()->adopted());
    EXPECT_EQ(second->local_agent()->endpoint().url, url);
    ASSERT_TRUE(uitest::wait_for([&] { return last_step(again) == 60; }, 30000))
        << "last step " << last_step(again);
    ASSERT_TRUE(uitest::wait_for([&] { return again->progress(0).state == "succeeded"; }, 10000));
    // The events that came while no studio was open are in the project too, once each.
    const auto run = store::get_run(*second->project(), fx.run_id);
    EXPECT_GT(run.last_seq, kept);
    EXPECT_EQ(run.events, run.last_seq + 1);
    EXPECT_EQ(run.setup.state, "succeeded");

    // The ended run's files come beside the project (not its resume checkpoints), and the run
    // opened again reads them there.
    const auto files = store::run_files_folder(*second->project(), fx.run_id);
    ASSERT_TRUE(uitest::wait_for([&] { return has_run_files(files); }, 30000));
    ASSERT_EQ(run_weight_files(files).size(), 1u);
    EXPECT_EQ(run_weight_files(files)[0], files / "artifacts" / "best.safetensors");
    EXPECT_EQ(std::filesystem::file_size(files / "artifacts" / "best.safetensors"), 100000u);
    EXPECT_FALSE(std::filesystem::exists(files / "checkpoints"));
    RunMonitor* offline = second->open_run(fx.run_id);
    EXPECT_EQ(offline->run_place(0).folder, files);
    // Deleting the run takes its files.
    store::delete_run(*second->project(), fx.run_id);
    EXPECT_FALSE(std::filesystem::exists(files));
}

TEST(CloseReopen, PauseThemPausesTheJob) {
    if (!QFileInfo(kAgent).isExecutable()) GTEST_SKIP() << "crucible-agent not built";
    LocalRun fx;
    { store::Project::create(fx.project_file); }
    auto window = fx.open_window();
    window->start_local_agent();
    ASSERT_TRUE(uitest::wait_for([&] { return window->local_agent()->ready(); }, 30000));
    fx.submit(*window, 200, 100);
    const auto endpoint = window->local_agent()->endpoint();
    const auto job = store::get_run(*window->project(), fx.run_id).setup.remote_job_id;
    ASSERT_TRUE(uitest::wait_for(
        [&] { return net::ApiClient(endpoint).job(job).state == JobState::Running; }, 20000));

    uitest::answer_next_message_box(QMessageBox::Cancel);  // closing is called off
    EXPECT_FALSE(window->close());
    uitest::answer_next_message_box(QMessageBox::No);  // "Pause them"
    EXPECT_TRUE(window->close());
    window.reset();
    EXPECT_TRUE(uitest::wait_for(
        [&] { return net::ApiClient(endpoint).job(job).state == JobState::Paused; }, 20000));
}

// An agent that does not answer: every try fails, the failure says why, and the folder is not
// marked complete (the next open tries again).
TEST(RunFiles, UnreachableAgentFailsAfterItsTriesAndMarksNothing) {
    const auto dest = uitest::temp_dir() / "run-1";
    RunPlace place;
    place.endpoint.url = "http://127.0.0.1:9";
    place.job = "j1";
    const auto got = fetch_run_files(place, dest, 3, std::chrono::milliseconds(10));
    ASSERT_EQ(got.failed.size(), 1u);
    EXPECT_NE(got.failed[0].find("the file list"), std::string::npos) << got.failed[0];
    EXPECT_EQ(got.fetched, 0);
    EXPECT_FALSE(has_run_files(dest));
}
