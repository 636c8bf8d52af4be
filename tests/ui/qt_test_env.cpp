#include "tests/ui/qt_test_env.h"

#include <gtest/gtest.h>

#include <QCoreApplication>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/base/file_io.h"
#include "core/net/remote_config.h"
#include "tests/support/temp_dir.h"

namespace crucible::uitest {

namespace {

class QtEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        const auto config = temp_dir();
        qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(path_to_utf8(config / "xdg")));
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

void clear_server_registry() {
    std::error_code ec;
    std::filesystem::remove(net::default_remotes_file(), ec);
}

}  // namespace crucible::uitest
