// The run setup's GPU picker: the chosen server's GPUs with live free memory (GET /v1/gpus through
// the core/net client, off the GUI thread, asked again while visible), "CPU only" for a server
// without GPUs, and the choice in the job submit (`gpus`, and the `device` option of a task that
// has one). The real crucible-agent is run with the fake NVML of the agent tests.
#include <gtest/gtest.h>

#include <httplib.h>

#include <QComboBox>
#include <QFileInfo>
#include <QLineEdit>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <atomic>
#include <mutex>
#include <thread>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/options_schema.h"
#include "core/net/token_store.h"
#include "core/store/project.h"
#include "tests/support/built_programs.h"
#include "tests/support/free_port.h"
#include "tests/support/loopback_server.h"
#include "tests/ui/qt_test_env.h"
#include "ui/gpu_picker.h"
#include "ui/options_form.h"
#include "ui/run_setup.h"
#include "ui/server_access.h"

using namespace crucible;
using namespace crucible::ui;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// The agent's GPU report as GpuReport::to_json writes it: two GPUs, the second with MIG.
Json gpu_report(std::uint64_t used0) {
    return {
        {"nvml", true},
        {"note", ""},
        {"driver_version", "550.54.15"},
        {"cuda_driver_version", 12040},
        {"gpus", Json::array({{{"index", 0},
                               {"name", "NVIDIA A100-SXM4-80GB"},
                               {"uuid", "GPU-1"},
                               {"memory_total", 80 * kGiB},
                               {"memory_used", used0},
                               {"utilization", 87},
                               {"temperature", 61},
                               {"power_w", 250.0},
                               {"processes", {4242}},
                               {"mig_enabled", false},
                               {"mig", Json::array()}},
                              {{"index", 1},
                               {"name", "NVIDIA H100"},
                               {"uuid", "GPU-2"},
                               {"memory_total", 80 * kGiB},
                               {"memory_used", 0},
                               {"utilization", 0},
                               {"temperature", 40},
                               {"power_w", 80.0},
                               {"processes", Json::array()},
                               {"mig_enabled", true},
                               {"mig", Json::array({{{"index", 0}, {"name", "MIG 3g.40gb"}},
                                                    {{"index", 1}, {"name", "MIG 3g.40gb"}}})}}})}};
}

// Three GPUs: gpu_report's two and a copy of GPU 0 as GPU 2; GPU 1 whole or split into MIG
// slices.
Json three_gpus(bool second_whole) {
    Json report = gpu_report(0);
    Json third = report["gpus"][0];
    third["index"] = 2;
    if (second_whole) {
        report["gpus"][1]["mig_enabled"] = false;
        report["gpus"][1]["mig"] = Json::array();
    }
    report["gpus"].push_back(third);
    return report;
}

// An agent that answers /v1/gpus with a report that the test changes, and records submits.
struct FakeAgent {
    std::mutex mutex;
    Json report;
    std::vector<std::string> jobs;
    std::atomic<int> gpu_calls{0};
    std::atomic<int> gpu_status{200};  // another status answers with the agent's error body
    int port = 0;
    test_support::LoopbackServer http;  // last: stopped before the members its routes use
    explicit FakeAgent(Json r) : report(std::move(r)) {
        http.on(net::routes::kGpus, [this](const httplib::Request&, httplib::Response& res) {
            ++gpu_calls;
            if (gpu_status != 200) {
                res.status = gpu_status;
                res.set_content(
                    gpu_status == 401
                        ? R"({"error":{"code":"unauthorized","message":"invalid token"}})"
                        : R"({"error":{"code":"too_many_failures","message":"retry in 9 s"}})",
                    "application/json");
                return;
            }
            std::lock_guard<std::mutex> lock(mutex);
            res.set_content(report.dump(), "application/json");
        });
        http.on(net::routes::kSubmitJob,
                [this](const httplib::Request& req, httplib::Response& res) {
                    std::lock_guard<std::mutex> lock(mutex);
                    jobs.push_back(req.body);
                    res.status = 201;
                    res.set_content(R"({"id":"job-1","state":"queued"})", "application/json");
                });
        port = http.listen();
    }
    void set_report(Json r) {
        std::lock_guard<std::mutex> lock(mutex);
        report = std::move(r);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

Json schema_with_device() {
    OptionSchema s("toy.task", "Toy");
    s.add({"epochs", OptionType::Integer, 10, 1.0, 100.0, {}, "", "train"});
    s.add({"device", OptionType::String, "", {}, {}, {}, "cpu or a GPU index", "train"});
    return Json::array({s.to_json()});
}

QString device_text(RunSetupView& view) {
    auto* edit = qobject_cast<QLineEdit*>(view.form()->editor("device"));
    return edit ? edit->text() : QStringLiteral("<no editor>");
}

}  // namespace

TEST(GpuPicker, ParsesTheAgentsReport) {
    const net::GpuReport listing = net::GpuReport::from_json(gpu_report(1 * kGiB));
    EXPECT_TRUE(listing.nvml);
    ASSERT_EQ(listing.gpus.size(), 2u);
    EXPECT_EQ(listing.gpus[0].name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(listing.gpus[0].memory_free(), 79 * kGiB);
    EXPECT_EQ(listing.gpus[1].mig.size(), 2u);
    EXPECT_EQ(describe_gpu(listing.gpus[0]),
              "GPU 0 · NVIDIA A100-SXM4-80GB · 79.0 GiB free of 80.0 GiB · 87 % busy · 61 °C");
    const net::GpuReport none = net::GpuReport::from_json(
        {{"nvml", false}, {"note", "NVML not found (no NVIDIA driver): CPU only"}, {"gpus", {}}});
    EXPECT_TRUE(none.gpus.empty());
    EXPECT_EQ(none.note, "NVML not found (no NVIDIA driver): CPU only");
    Json bad = gpu_report(0);
    bad["gpus"][1]["memory_used"] = "lots";
    try {
        net::GpuReport::from_json(bad);
        ADD_FAILURE() << "a text memory_used was accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("gpus[1].memory_used"), std::string::npos) << e.what();
    }
}

TEST(GpuPicker, ListsTheServersGpusWithLiveFreeMemory) {
    FakeAgent agent(gpu_report(1 * kGiB));
    GpuPicker picker(nullptr, 100);
    picker.set_endpoint(net::RemoteEndpoint{agent.url(), "tok", ""});
    EXPECT_EQ(agent.gpu_calls.load(), 0);  // asks only while visible
    picker.show();
    ASSERT_TRUE(uitest::wait_for([&] { return picker.known(); }))
        << picker.status_text().toStdString();
    QStringList lines = picker.gpu_lines();
    ASSERT_EQ(lines.size(), 2);
    EXPECT_TRUE(lines[0].startsWith("GPU 0 · NVIDIA A100-SXM4-80GB · 79.0 GiB free of 80.0 GiB"))
        << lines[0].toStdString();
    EXPECT_TRUE(lines[1].contains("80.0 GiB free") && lines[1].contains("2 MIG instances"))
        << lines[1].toStdString();
    EXPECT_TRUE(picker.use_gpu());
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 1);
    // Memory fills up on the server: the list follows while visible.
    agent.set_report(gpu_report(60 * kGiB));
    ASSERT_TRUE(uitest::wait_for([&] {
        return picker.gpu_lines().value(0).contains("20.0 GiB free");
    })) << picker.gpu_lines().value(0).toStdString();
    // Hidden: no more questions.
    picker.hide();
    QTest::qWait(150);
    const int calls = agent.gpu_calls.load();
    QTest::qWait(400);
    EXPECT_LE(agent.gpu_calls.load(), calls + 1);  // at most one that was under way
    picker.choose_cpu(true);
    EXPECT_FALSE(picker.use_gpu());
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 0);
}

// [B2 6/8] A server with several whole GPUs offers all of them or a count, one rank per GPU;
// MIG-split GPUs are not counted (the report above has one whole GPU: no such entries).
TEST(GpuPicker, OffersAllGpusOrACountForOneRunWithOneRankEach) {
    Json report = three_gpus(/*second_whole=*/true);
    FakeAgent agent(report);
    GpuPicker picker(nullptr, 100);
    picker.set_endpoint(net::RemoteEndpoint{agent.url(), "tok", ""});
    picker.show();
    ASSERT_TRUE(uitest::wait_for([&] { return picker.known(); }));
    EXPECT_EQ(picker.whole_gpus(), 3);
    auto* combo = picker.findChild<QComboBox*>(QStringLiteral("device"));
    ASSERT_NE(combo, nullptr);
    QStringList entries;
    for (int i = 0; i < combo->count(); ++i)
        entries << combo->itemText(i);
    EXPECT_TRUE(entries.contains("All 3 GPUs (one rank each)")) << entries.join("|").toStdString();
    EXPECT_TRUE(entries.contains("2 free GPUs (one rank each)")) << entries.join("|").toStdString();
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 1);  // the default: a free GPU
    picker.choose_gpu_count(3);
    EXPECT_EQ(combo->currentText(), "All 3 GPUs (one rank each)");
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 3);
    EXPECT_FALSE(picker.submit_gpu().has_value());
    picker.choose_gpu(2);  // one particular GPU again
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 1);
    EXPECT_EQ(picker.submit_gpu().value_or(-1), 2);
    // The server loses a GPU (MIG turned on): a count it no longer has falls back to one GPU.
    picker.choose_gpu_count(3);
    report["gpus"][1]["mig_enabled"] = true;
    agent.set_report(report);
    ASSERT_TRUE(uitest::wait_for([&] { return picker.whole_gpus() == 2; }));
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 1);
    picker.choose_cpu(true);
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 0);
}

// Ticking GPUs in the list picks exactly those, one rank each (the submit's `gpu` list); a
// MIG-split GPU cannot be ticked; another choice clears the ticks.
TEST(GpuPicker, TickedGpusAreTheJobsGpus) {
    FakeAgent agent(three_gpus(/*second_whole=*/false));
    GpuPicker picker(nullptr, 100);
    picker.set_endpoint(net::RemoteEndpoint{agent.url(), "tok", ""});
    picker.show();
    ASSERT_TRUE(uitest::wait_for([&] { return picker.known(); }));
    auto* list = picker.findChild<QListWidget*>(QStringLiteral("gpus"));
    auto* combo = picker.findChild<QComboBox*>(QStringLiteral("device"));
    ASSERT_TRUE(list && combo);
    ASSERT_EQ(list->count(), 3);
    EXPECT_FALSE(list->item(1)->flags() & Qt::ItemIsUserCheckable) << "MIG slices";
    int changes = 0;
    QObject::connect(&picker, &GpuPicker::choice_changed, [&] { ++changes; });
    list->item(0)->setCheckState(Qt::Checked);
    ASSERT_TRUE(uitest::wait_for([&] { return changes == 1; }));
    EXPECT_EQ(picker.submit_gpu_list(), std::vector<int>{0}) << "one ticked: that GPU only";
    EXPECT_EQ(combo->currentText().toStdString().rfind("GPU 0 only", 0), 0u);
    list->item(2)->setCheckState(Qt::Checked);
    ASSERT_TRUE(uitest::wait_for([&] { return changes == 2; }));
    EXPECT_EQ(picker.submit_gpu_list(), (std::vector<int>{0, 2}));
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 2);
    EXPECT_EQ(combo->currentText(), "GPUs 0, 2 (one rank each)");
    // A refresh keeps the ticks.
    const int calls = agent.gpu_calls.load();
    ASSERT_TRUE(uitest::wait_for([&] { return agent.gpu_calls.load() > calls + 1; }));
    EXPECT_EQ(picker.submit_gpu_list(), (std::vector<int>{0, 2}));
    EXPECT_EQ(list->item(2)->checkState(), Qt::Checked);
    picker.choose_gpu_count(1);
    EXPECT_TRUE(picker.submit_gpu_list().empty());
    EXPECT_EQ(list->item(0)->checkState(), Qt::Unchecked);
    picker.choose_gpus({2, 0});
    EXPECT_EQ(picker.submit_gpu_list(), (std::vector<int>{0, 2}));
    picker.choose_cpu(true);
    EXPECT_TRUE(picker.submit_gpu_list().empty());
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 0);
}

// A wrong token is said as such, and not sent again on every refresh (each try would count
// against the address at the agent); another token asks again. A slowed-down address is told
// apart from a wrong token.
TEST(GpuPicker, ARefusedTokenIsSaidAndNotSentAgain) {
    FakeAgent agent(gpu_report(1 * kGiB));
    agent.gpu_status = 401;
    GpuPicker picker(nullptr, 30);
    picker.set_endpoint(net::RemoteEndpoint{agent.url(), "wrong", ""});
    picker.show();
    ASSERT_TRUE(uitest::wait_for([&] {
        return picker.status_text().contains("refused the token");
    })) << picker.status_text().toStdString();
    EXPECT_TRUE(picker.status_text().contains("invalid token"))
        << picker.status_text().toStdString();
    QTest::qWait(300);  // ten refresh periods
    EXPECT_EQ(agent.gpu_calls.load(), 1);
    agent.gpu_status = 429;
    picker.set_endpoint(net::RemoteEndpoint{agent.url(), "another", ""});
    ASSERT_TRUE(uitest::wait_for([&] { return picker.status_text().contains("slowed down"); }))
        << picker.status_text().toStdString();
    EXPECT_EQ(agent.gpu_calls.load(), 2);
    agent.gpu_status = 200;
    picker.set_endpoint(net::RemoteEndpoint{agent.url(), "right", ""});
    ASSERT_TRUE(uitest::wait_for([&] { return picker.known(); }));
}

TEST(GpuPicker, ServerWithoutGpusIsCpuOnlyAndUnknownIsSaid) {
    FakeAgent agent({{"nvml", false},
                     {"note", "NVML not found (no NVIDIA driver): CPU only"},
                     {"driver_version", ""},
                     {"cuda_driver_version", 0},
                     {"gpus", Json::array()}});
    GpuPicker picker(nullptr, 100);
    picker.show();
    EXPECT_TRUE(picker.status_text().contains("GPUs unknown"))
        << picker.status_text().toStdString();
    EXPECT_FALSE(picker.submit_gpus().has_value());
    picker.set_endpoint(net::RemoteEndpoint{agent.url(), "tok", ""});
    ASSERT_TRUE(uitest::wait_for([&] { return picker.known(); }));
    EXPECT_TRUE(picker.gpu_lines().isEmpty());
    EXPECT_TRUE(picker.status_text().startsWith("CPU only")) << picker.status_text().toStdString();
    EXPECT_FALSE(picker.use_gpu());
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 0);
    EXPECT_EQ(picker.findChild<QComboBox*>("device")->currentText(), "CPU");
    // An agent that cannot be reached: the picker says so instead of guessing.
    picker.set_endpoint(net::RemoteEndpoint{"http://127.0.0.1:9", "tok", ""});
    ASSERT_TRUE(uitest::wait_for([&] { return picker.status_text().startsWith("GPUs unknown:"); }))
        << picker.status_text().toStdString();
    EXPECT_FALSE(picker.submit_gpus().has_value());
}

TEST(GpuPicker, RunSetupSendsTheChoiceWithTheJob) {
    FakeAgent agent(gpu_report(1 * kGiB));
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("gpu-box", agent.url(), "tok", "");
    RunSetupView view(project.get(), schema_with_device());
    view.show();
    GpuPicker* picker = view.gpu_picker();
    ASSERT_NE(picker, nullptr);
    EXPECT_TRUE(picker->status_text().contains("GPUs unknown"));  // "This computer", no agent
    view.select_server("gpu-box");
    ASSERT_TRUE(uitest::wait_for([&] { return picker->known(); }))
        << picker->status_text().toStdString();
    EXPECT_EQ(picker->gpu_lines().size(), 2);

    // The agent has the n-th job and the view has heard back (one submit at a time).
    auto* submit_button = view.findChild<QPushButton*>("submit");
    auto submitted = [&](std::size_t n) {
        return uitest::wait_for([&] {
            std::lock_guard<std::mutex> lock(agent.mutex);
            return agent.jobs.size() >= n && submit_button->isEnabled();
        });
    };
    auto body = [&](std::size_t i) {
        std::lock_guard<std::mutex> lock(agent.mutex);
        return Json::parse(agent.jobs.at(i));
    };
    ASSERT_GE(view.submit("on a gpu"), 0);
    ASSERT_TRUE(submitted(1)) << view.error_text().toStdString();
    EXPECT_EQ(body(0)["gpus"], 1);
    EXPECT_FALSE(body(0)["options"].contains("device") && body(0)["options"]["device"] == "cpu");

    // The person picks the CPU: the device option says so and the job asks for no GPU.
    auto* choice = picker->findChild<QComboBox*>("device");
    ASSERT_NE(choice, nullptr);
    ASSERT_EQ(choice->currentIndex(), 0);
    QTest::keyClick(choice, Qt::Key_Down);  // as a person: the combo reports it as activated
    ASSERT_EQ(choice->currentIndex(), 1);
    EXPECT_EQ(device_text(view), "cpu");
    EXPECT_TRUE(view.command_line().contains("device=cpu")) << view.command_line().toStdString();
    ASSERT_GE(view.submit("on the cpu"), 0);
    ASSERT_TRUE(submitted(2));
    EXPECT_EQ(body(1)["gpus"], 0);
    EXPECT_EQ(body(1)["options"]["device"], "cpu");

    // Typing device=0 in the form chooses a GPU again.
    qobject_cast<QLineEdit*>(view.form()->editor("device"))->setText("0");
    EXPECT_TRUE(picker->use_gpu());

    // One particular GPU: the list offers each, and the job asks the agent for that one; the
    // choice survives the periodic refresh of the listing.
    ASSERT_EQ(choice->count(), 4);  // a free GPU, CPU, GPU 0 only, GPU 1 only
    EXPECT_TRUE(choice->itemText(3).startsWith("GPU 1 only")) << choice->itemText(3).toStdString();
    choice->setCurrentIndex(1);
    QTest::keyClick(choice, Qt::Key_Down);
    QTest::keyClick(choice, Qt::Key_Down);  // to "GPU 1 only"
    ASSERT_EQ(choice->currentIndex(), 3);
    EXPECT_EQ(picker->submit_gpu().value_or(-1), 1);
    picker->refresh();
    QTest::qWait(300);
    EXPECT_EQ(choice->currentIndex(), 3);
    ASSERT_GE(view.submit("on gpu 1"), 0);
    ASSERT_TRUE(submitted(3));
    EXPECT_EQ(body(2)["gpu"], 1);
    EXPECT_EQ(body(2)["gpus"], 1);
    EXPECT_FALSE(body(0).contains("gpu"));  // "a free GPU" names none
}

#ifdef CRUCIBLE_FAKE_NVML
// The real agent with the agent tests' fake NVML (two GPUs of 80 GiB, GPU 0 using 1 GiB).
TEST(GpuPicker, ListsTheGpusOfARealAgent) {
    const QString program = QString::fromStdString(crucible::path_to_utf8(
        crucible::test_support::built_program("crucible-agent", "app/agent")));
    if (!QFileInfo(program).isExecutable()) GTEST_SKIP() << "crucible-agent not built";
    const auto data = uitest::temp_dir() / "agent";
    fs::create_directories(data);
    const std::string token = net::TokenStore(data / "tokens.json").create("studio");
    const int port = test_support::free_loopback_port();
    QProcess agent;
    agent.setProcessChannelMode(QProcess::MergedChannels);
    agent.start(program, {"--listen", QStringLiteral("127.0.0.1:%1").arg(port), "--data",
                          QString::fromStdString(path_to_utf8(data)), "--worker",
                          QStringLiteral(CRUCIBLE_FAKE_WORKER), "--nvml",
                          QStringLiteral(CRUCIBLE_FAKE_NVML)});
    ASSERT_TRUE(agent.waitForStarted(10000));
    struct Stop {
        QProcess& p;
        ~Stop() {
            p.terminate();
            p.waitForFinished(10000);
        }
    } stop{agent};
    GpuPicker picker(nullptr, 200);
    picker.set_endpoint(net::RemoteEndpoint{"http://127.0.0.1:" + std::to_string(port), token, ""});
    picker.show();
    // The agent may still be starting: the picker asks again until it answers.
    ASSERT_TRUE(uitest::wait_for([&] { return picker.known(); }, 20000))
        << picker.status_text().toStdString() << agent.readAll().toStdString();
    const QStringList lines = picker.gpu_lines();
    ASSERT_EQ(lines.size(), 2) << lines.join("\n").toStdString();
    EXPECT_TRUE(lines[0].startsWith("GPU 0 · NVIDIA Fake A100 · 79.0 GiB free of 80.0 GiB"))
        << lines[0].toStdString();
    EXPECT_TRUE(lines[1].startsWith("GPU 1 · NVIDIA Fake H100 · 80.0 GiB free of 80.0 GiB"))
        << lines[1].toStdString();
    EXPECT_EQ(picker.submit_gpus().value_or(-1), 1);
}
#endif

// The memory check reads the command line's own dry run: a tiny Llama's LoRA run fits a GPU of
// 2 GiB and not one of 0.5 GiB (what the CLI keeps for the CUDA context alone is 0.75 GiB).
TEST(MemoryCheck, ReadsTheCommandLinesDryRun) {
    const QString program =
        QString::fromStdString(path_to_utf8(test_support::built_program("crucible", "app/cli")));
    ASSERT_TRUE(QFileInfo(program).isExecutable()) << program.toStdString();
    const QString model = QString::fromStdString(
        path_to_utf8(fs::path(CRUCIBLE_SOURCE_DIR) / "tests/fixtures/golden/llama3_tiny"));
    auto dry_run = [&](const char* gib) {
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(program, {"train", "llm.lora", "model=" + model, "dry_run=true",
                          QStringLiteral("gpu_memory=") + gib});
        EXPECT_TRUE(p.waitForFinished(60000));
        return parse_dry_run(QString::fromUtf8(p.readAll()), p.exitCode(), QString(gib).toDouble());
    };
    const auto small = dry_run("0.5");
    ASSERT_TRUE(small);
    EXPECT_FALSE(small->fits);
    EXPECT_GT(small->predicted_gib, 0.0);
    EXPECT_LT(small->predicted_gib, 0.5);
    const auto enough = dry_run("2");
    ASSERT_TRUE(enough);
    EXPECT_TRUE(enough->fits);
    EXPECT_DOUBLE_EQ(enough->predicted_gib, small->predicted_gib);
    // A task without a prediction, or a failed dry run, gives no verdict.
    EXPECT_FALSE(parse_dry_run("detect.yolo makes no memory prediction yet", 0, 24));
    EXPECT_FALSE(parse_dry_run("error: model: no such folder", 1, 24));
}

// Before a run goes to a GPU it will not fit, the run setup says so under the device row and
// asks; declining submits nothing, a GPU with room submits without asking.
TEST(GpuPicker, RunSetupWarnsBeforeSubmittingARunThatWillNotFit) {
    Json report = gpu_report(1 * kGiB);
    report["gpus"][0]["memory_total"] = 24 * kGiB;
    report["gpus"][1]["mig_enabled"] = false;
    report["gpus"][1]["mig"] = Json::array();
    FakeAgent agent(report);
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("gpu-box", agent.url(), "tok", "");
    RunSetupView view(project.get(), schema_with_device());
    // The dry run as the CLI answers it: 39 GiB, which fits only a GPU of 80.
    std::vector<QStringList> asked;
    view.set_dry_runner([&](const QStringList& args,
                            std::function<void(int, const QString&)> done) {
        asked.push_back(args);
        const bool big_gpu = args.contains("gpu_memory=80.00");
        done(big_gpu ? 0 : 3, QStringLiteral("  predicted peak      40000.0 MiB (39.06 GiB)\n"));
    });
    int questions = 0;
    bool answer = false;
    view.set_confirm([&](const QString& question) {
        ++questions;
        EXPECT_TRUE(question.contains("39.1 GiB")) << question.toStdString();
        return answer;
    });
    view.show();
    view.select_server("gpu-box");
    GpuPicker* picker = view.gpu_picker();
    ASSERT_TRUE(uitest::wait_for([&] { return picker->known(); }));
    // "A free GPU": the smallest the agent may assign, 24 GiB.
    view.check_memory_now();
    ASSERT_TRUE(view.memory_check()->verdict());
    EXPECT_FALSE(view.memory_check()->verdict()->fits);
    EXPECT_TRUE(view.memory_check()->text().contains("will not fit"))
        << view.memory_check()->text().toStdString();
    ASSERT_FALSE(asked.empty());
    EXPECT_EQ(asked.back().mid(0, 2), (QStringList{"train", "toy.task"}));
    EXPECT_TRUE(asked.back().contains("dry_run=true"));
    EXPECT_TRUE(asked.back().contains("gpu_memory=24.00")) << asked.back().join(' ').toStdString();

    EXPECT_EQ(view.submit("declined"), -1);
    EXPECT_EQ(questions, 1);
    EXPECT_TRUE(view.error_text().contains("will not fit")) << view.error_text().toStdString();
    QTest::qWait(200);
    {
        std::lock_guard<std::mutex> lock(agent.mutex);
        EXPECT_TRUE(agent.jobs.empty());
    }
    answer = true;
    ASSERT_GE(view.submit("anyway"), 0);
    EXPECT_EQ(questions, 2);
    ASSERT_TRUE(uitest::wait_for([&] {
        std::lock_guard<std::mutex> lock(agent.mutex);
        return agent.jobs.size() == 1;
    }));

    // GPU 1 (80 GiB): it fits, the label says so, and the submit asks nothing.
    picker->choose_gpu(1);
    ASSERT_TRUE(
        uitest::wait_for([&] { return view.findChild<QPushButton*>("submit")->isEnabled(); }));
    view.check_memory_now();
    ASSERT_TRUE(view.memory_check()->verdict());
    EXPECT_TRUE(view.memory_check()->verdict()->fits);
    EXPECT_TRUE(view.memory_check()->text().contains("fits"))
        << view.memory_check()->text().toStdString();
    ASSERT_GE(view.submit("on the big one"), 0);
    EXPECT_EQ(questions, 2);
}

// The GPU list refreshes every few seconds; the memory check asks the command line once per run
// and GPU, also when the task makes no prediction (no verdict to keep).
TEST(GpuPicker, MemoryCheckAsksOncePerRunAndGpuAcrossRefreshes) {
    FakeAgent agent(gpu_report(1 * kGiB));
    const auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    uitest::clear_server_registry();
    add_server("gpu-box", agent.url(), "tok", "");
    RunSetupView view(project.get(), schema_with_device());
    int asked = 0;
    view.set_dry_runner([&](const QStringList&, std::function<void(int, const QString&)> done) {
        ++asked;
        done(0, QStringLiteral("toy.task makes no memory prediction yet; nothing was trained"));
    });
    view.show();
    view.select_server("gpu-box");
    GpuPicker* picker = view.gpu_picker();
    ASSERT_TRUE(uitest::wait_for([&] { return picker->known(); }));
    ASSERT_TRUE(uitest::wait_for([&] { return asked == 1; }));  // after the pause for typing
    EXPECT_FALSE(view.memory_check()->verdict());
    for (int i = 0; i < 3; ++i) {
        picker->refresh();
        QTest::qWait(900);  // past the pause each time
    }
    EXPECT_EQ(asked, 1);
    qobject_cast<QSpinBox*>(view.form()->editor("epochs"))->setValue(12);  // another run
    ASSERT_TRUE(uitest::wait_for([&] { return asked == 2; }));
}
