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
