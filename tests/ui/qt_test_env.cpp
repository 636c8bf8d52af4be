#include "tests/ui/qt_test_env.h"

#include <gtest/gtest.h>

#include <QAbstractButton>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMessageBox>
#include <QTimer>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/base/file_io.h"
#include "core/data/synth/synth.h"
#include "core/net/remote_config.h"
#include "tests/support/built_programs.h"
#include "tests/support/temp_dir.h"

namespace crucible::uitest {

namespace {

class QtEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        const auto config = temp_dir();
        qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(path_to_utf8(config / "xdg")));
        // The studio's data (the local agent's folder, the demo) stays out of the user's too.
        qputenv("XDG_DATA_HOME", QByteArray::fromStdString(path_to_utf8(config / "xdg-data")));
        qputenv("CRUCIBLE_CONFIG_DIR",
                QByteArray::fromStdString(path_to_utf8(config / "crucible")));
        static int argc = 1;
        static char name[] = "ui_gui_tests";
        static char* argv[] = {name, nullptr};
        app_ = std::make_unique<QApplication>(argc, argv);
        QCoreApplication::setOrganizationName(QStringLiteral("CrucibleTest"));
        QCoreApplication::setApplicationName(QStringLiteral("ui_gui_tests"));
    }
    void TearDown() override { app_.reset(); }

  private:
    std::unique_ptr<QApplication> app_;
};

[[maybe_unused]] ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new QtEnvironment);

}  // namespace

std::filesystem::path temp_dir() {
    return test_support::scratch_dir("ui");
}

void answer_next_message_box(int button, int timeout_ms) {
    auto* timer = new QTimer;
    auto* clock = new QElapsedTimer;
    clock->start();
    QObject::connect(timer, &QTimer::timeout, [timer, clock, button, timeout_ms] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box && clock->elapsed() < timeout_ms) return;
        if (box)
            if (QAbstractButton* b = box->button(static_cast<QMessageBox::StandardButton>(button)))
                b->click();
        timer->stop();
        timer->deleteLater();
        delete clock;
    });
    timer->start(20);
}

void clear_server_registry() {
    std::error_code ec;
    std::filesystem::remove(net::default_remotes_file(), ec);
}

std::filesystem::path command_line_program() {
    return test_support::built_program("crucible", "app/cli");
}

bool command_line_built() {
    return QFileInfo(QString::fromStdString(path_to_utf8(command_line_program()))).isExecutable();
}

std::filesystem::path fixture_like_shapes(const std::filesystem::path& dir, int train, int val,
                                          unsigned seed) {
    data::SynthOptions o;
    o.classes = 4;
    o.imgsz = 320;
    o.train = train;
    o.val = val;
    o.seed = seed;
    return data::write_synth_dataset(dir, o);
}

}  // namespace crucible::uitest
