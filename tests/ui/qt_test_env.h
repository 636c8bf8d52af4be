#pragma once
// GUI tests run on Qt's offscreen platform inside GoogleTest: one QApplication per test process,
// settings and secrets in a temporary folder so tests never touch the user's.
#include <QApplication>
#include <filesystem>

namespace crucible::uitest {

// A fresh temporary folder per call (tests/support/temp_dir.h: gone when the process ends).
std::filesystem::path temp_dir();
// Empties the user's server registry (remotes.json in the test's config folder), which every
// test of the process shares: a test that adds servers starts from none.
void clear_server_registry();
// Presses `button` of the next message box that opens (within `timeout_ms`), as a user would
// answer it; returns at once (the box opens later, inside the code under test).
void answer_next_message_box(int button, int timeout_ms = 5000);

// The crucible command line of this build, for tests that predict, score or export through it
// as the studio does (they skip in a studio-only build, which has none).
std::filesystem::path command_line_program();
bool command_line_built();
// Synthetic shapes of the kind the reference's yolov8n fixture learnt (four classes, 320 px):
// `train` and `val` images under `dir`; returns the data.yaml.
std::filesystem::path fixture_like_shapes(const std::filesystem::path& dir, int train, int val,
                                          unsigned seed);

}  // namespace crucible::uitest

#include <QDeadlineTimer>
#include <QTest>

namespace crucible::uitest {

// Runs the event loop until `condition` holds or `timeout_ms` passes (QTRY_* report to QTest's
// logger, which GoogleTest does not see).
template <class Condition>
bool wait_for(Condition&& condition, int timeout_ms = 5000) {
    QDeadlineTimer deadline(timeout_ms);
    while (!condition()) {
        if (deadline.hasExpired()) return false;
        QTest::qWait(10);
    }
    return true;
}

}  // namespace crucible::uitest
