// Fine-tuning from a reference checkpoint, end to end from the studio: the run setup on "This
// computer" (the private crucible-agent with the real crucible-worker of this build) trains
// detect.yolo for one epoch from ../shared/fixtures/yolov8/yolov8n_shapes11.pt on a tiny
// synthetic set; the job succeeds and its log says the checkpoint's weights were loaded. Skips
// when the agent or the worker of this build is absent.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <chrono>
#include <thread>

#include "core/base/file_io.h"
#include "core/data/synth/synth.h"
#include "core/net/api_client.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/support/built_programs.h"
#include "tests/ui/qt_test_env.h"
#include "ui/local_agent.h"
#include "ui/options_form.h"
#include "ui/run_setup.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

TEST(PretrainedEndToEnd, StudioFineTunesFromAnUltralyticsCheckpoint) {
    const QString agent_exe = QString::fromStdString(crucible::path_to_utf8(
        crucible::test_support::built_program("crucible-agent", "app/agent")));
    const QString worker_exe = QString::fromStdString(crucible::path_to_utf8(
        crucible::test_support::built_program("crucible-worker", "app/worker")));
    if (!QFileInfo(agent_exe).isExecutable() || !QFileInfo(worker_exe).isExecutable())
        GTEST_SKIP() << "crucible-agent or crucible-worker not built in " << CRUCIBLE_BINARY_DIR;
    const fs::path checkpoint = fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "yolov8n_shapes11.pt";
    ASSERT_TRUE(fs::exists(checkpoint)) << checkpoint;
    const auto dir = uitest::temp_dir();
    data::SynthOptions so;
    so.train = 8;
    so.val = 4;
    so.classes = 4;  // as the checkpoint: every weight is kept
    so.imgsz = 96;
    const fs::path yaml = data::write_synth_dataset(dir / "shapes", so);

    LocalAgent agent(agent_exe, QString::fromStdString(path_to_utf8(dir / "agent")), worker_exe);
    agent.set_idle_exit(5);  // it outlives the test otherwise
    bool up = false;
    QString failure;
    QObject::connect(&agent, &LocalAgent::started_ok, [&] { up = true; });
    QObject::connect(&agent, &LocalAgent::failed, [&](const QString& m) { failure = m; });
    agent.start();
    ASSERT_TRUE(uitest::wait_for([&] { return up || !failure.isEmpty(); }, 60000));
    ASSERT_TRUE(up) << failure.toStdString();
    net::ApiClient api(agent.endpoint());
    const Json tasks = api.get("/v1/info").at("tasks");

    auto project = store::Project::create(dir / "p.crucible");
    RunSetupView view(project.get(), tasks);
    view.set_local_endpoint(agent.endpoint());
    view.show();
    ASSERT_TRUE(view.select_task("detect.yolo"));
    // What the person picks in the form: the checkpoint with the file picker, the data set.
    view.form()->set_values({{"model", path_to_utf8(checkpoint)},
                             {"data", path_to_utf8(yaml)},
                             {"epochs", 1},
                             {"batch", 4},
                             {"imgsz", 96},
                             {"device", "cpu"},
                             {"workers", 1}});
    std::int64_t run_id = -1;
    QString job, refused;
    QObject::connect(&view, &RunSetupView::run_submitted, [&](std::int64_t id, const QString& j) {
        run_id = id;
        job = j;
    });
    QObject::connect(&view, &RunSetupView::submit_failed, [&](const QString& m) { refused = m; });
    view.submit("from-pretrained");
    ASSERT_TRUE(uitest::wait_for([&] { return run_id >= 0 || !refused.isEmpty(); }, 30000));
    ASSERT_TRUE(refused.isEmpty()) << refused.toStdString();

    std::string state;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (std::chrono::steady_clock::now() < deadline) {
        state = api.get("/v1/jobs/" + job.toStdString()).value("state", std::string());
        if (state == "succeeded" || state == "failed" || state == "canceled") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const fs::path job_dir = dir / "agent" / "jobs" / job.toStdString();
    const std::string events = read_file_bytes(job_dir / "events.jsonl");
    ASSERT_EQ(state, "succeeded") << events;
    // The worker started from the checkpoint: every tensor of YOLOv8n loaded, no new head.
    EXPECT_NE(events.find("yolov8n_shapes11.pt: YOLOv8n"), std::string::npos) << events;
    EXPECT_NE(events.find("tensors loaded"), std::string::npos) << events;
    EXPECT_EQ(events.find("new class head"), std::string::npos) << events;
    EXPECT_NE(events.find("metrics/mAP50(B)"), std::string::npos) << events;
    // The project remembers the run with the checkpoint it started from.
    EXPECT_EQ(store::get_run(*project, run_id).setup.options.value("model", std::string()),
              path_to_utf8(checkpoint));
    agent.stop();
}
