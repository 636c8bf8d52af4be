// Pre-labelling on a server's GPU (RemotePredict): the real crucible-agent on loopback with the
// real crucible-worker runs the detection task's `predict` command as a job on the images and
// weights the studio sends, and the suggestions that come back equal the ones `crucible predict`
// makes next to the studio. Through the annotation editor too, and a cancel cancels the job.
#include <gtest/gtest.h>

#include <QFileInfo>

#include "core/base/file_io.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "tests/support/built_programs.h"
#include "tests/ui/qt_test_env.h"
#include "ui/annotation_editor.h"
#include "ui/annotation_store.h"
#include "ui/local_agent.h"
#include "ui/predict_process.h"
#include "ui/remote_predict.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

namespace {

const fs::path kAgent = test_support::built_program("crucible-agent", "app/agent");
const fs::path kWorker = test_support::built_program("crucible-worker", "app/worker");
const fs::path kTrained = CRUCIBLE_TRAINED_SHAPES_DIR;

fs::path trained_weights() {
    return kTrained / "runs" / "train" / "artifacts" / "weights" / "best.safetensors";
}

// The first `count` images of the fixture's split ("train": 128 images, "val": 16).
std::vector<fs::path> fixture_images(const char* split, int count) {
    std::vector<fs::path> out;
    for (int k = 0; k < count; ++k) {
        char name[16];
        std::snprintf(name, sizeof name, "%06d.jpg", k);
        out.push_back(kTrained / "shapes" / "images" / split / name);
    }
    return out;
}

std::vector<fs::path> val_images(int count) {
    return fixture_images("val", count);
}

// Runs `p` to its end; returns whether it succeeded.
bool run_to_end(Predictor& p, int timeout_ms = 120000) {
    bool finished = false, ok = false;
    QObject::connect(&p, &Predictor::done, [&](bool good) {
        finished = true;
        ok = good;
    });
    p.start();
    EXPECT_TRUE(uitest::wait_for([&] { return finished; }, timeout_ms)) << "no end";
    return ok;
}

}  // namespace

TEST(RemotePrelabel, TheServersSuggestionsEqualTheLocalOnesAndCancelCancelsTheJob) {
    if (!uitest::command_line_built() ||
        !QFileInfo::exists(QString::fromStdString(path_to_utf8(kWorker))))
        GTEST_SKIP() << "the command line and crucible-worker are not in this build (studio-only "
                        "build)";
    ASSERT_TRUE(fs::exists(trained_weights())) << "the fixture trained_shapes did not run";
    const auto dir = uitest::temp_dir();
    // An agent with the real worker (this computer's, as the studio starts it): a server.
    LocalAgent agent(QString::fromStdString(path_to_utf8(kAgent)),
                     QString::fromStdString(path_to_utf8(dir / "agent")),
                     QString::fromStdString(path_to_utf8(kWorker)), nullptr,
                     {"--nvml", "/nonexistent/libnvidia-ml.so.1"});
    agent.set_idle_exit(5);
    agent.start();
    ASSERT_TRUE(uitest::wait_for([&] { return agent.ready(); }, 30000));
    const net::RemoteEndpoint endpoint = agent.endpoint();
    const auto client = [&] { return net::ApiClient(endpoint); };
    const auto images = val_images(6);
    const QStringList size = {QStringLiteral("imgsz=96"), QStringLiteral("device=cpu")};

    PredictProcess local(QString::fromStdString(path_to_utf8(uitest::command_line_program())),
                         QStringLiteral("detect"), trained_weights(), images, size);
    ASSERT_TRUE(run_to_end(local)) << local.error().toStdString();
    RemotePredict remote(endpoint, QStringLiteral("gpu1"), QStringLiteral("detect"),
                         trained_weights(), images, size);
    int last_progress = -1;
    QObject::connect(&remote, &Predictor::progress, [&](int done, int) { last_progress = done; });
    ASSERT_TRUE(run_to_end(remote)) << remote.error().toStdString();
    ASSERT_FALSE(remote.job_id().empty());
    // The poll that saw the job end had counted a label file per image.
    EXPECT_EQ(last_progress, static_cast<int>(images.size()));

    ASSERT_EQ(remote.detections().size(), images.size());
    std::size_t boxes = 0;
    for (std::size_t i = 0; i < images.size(); ++i) {
        const auto& a = local.detections()[i];
        const auto& b = remote.detections()[i];
        ASSERT_EQ(a.size(), b.size()) << "image " << i;
        for (std::size_t k = 0; k < a.size(); ++k, ++boxes) {
            EXPECT_EQ(a[k].cls, b[k].cls);
            EXPECT_NEAR(a[k].cx, b[k].cx, 1e-5);
            EXPECT_NEAR(a[k].cy, b[k].cy, 1e-5);
            EXPECT_NEAR(a[k].w, b[k].w, 1e-5);
            EXPECT_NEAR(a[k].h, b[k].h, 1e-5);
            EXPECT_NEAR(a[k].conf, b[k].conf, 1e-5);
        }
    }
    EXPECT_GT(boxes, 6u) << "the trained model should suggest something on 6 images";
    // The job is the agent's, under the caller's token, and its output stayed in its folder.
    const auto job = client().job(remote.job_id());
    EXPECT_EQ(job.command, "predict");
    EXPECT_EQ(job.state, JobState::Succeeded);

    // Cancel once the job is submitted: the studio says so and the agent cancels the job.
    // Long enough (128 images at 640 px on the CPU: seconds) that the job is still running when
    // the cancel arrives; 16 small images could finish first on a quiet machine.
    const QStringList slow = {QStringLiteral("imgsz=640"), QStringLiteral("device=cpu")};
    RemotePredict canceled(endpoint, QStringLiteral("gpu1"), QStringLiteral("detect"),
                           trained_weights(), fixture_images("train", 128), slow);
    bool ended = false;
    QObject::connect(&canceled, &Predictor::done, [&](bool) { ended = true; });
    canceled.start();
    ASSERT_TRUE(uitest::wait_for([&] { return !canceled.job_id().empty(); }, 60000));
    canceled.cancel();
    ASSERT_TRUE(ended);
    EXPECT_EQ(canceled.error(), QStringLiteral("canceled"));
    const std::string cancelled_job = canceled.job_id();
    EXPECT_TRUE(uitest::wait_for(
        [&] { return client().job(cancelled_job).state == JobState::Canceled; }, 60000));
}
