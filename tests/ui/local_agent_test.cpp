// "This computer": the studio starts a private crucible-agent on 127.0.0.1 with a fresh token,
// reaches it through the core/net client, and stops it. Needs the crucible-agent of this build
// (built with the studio in CI; the test says so and skips when it is absent).
#include <gtest/gtest.h>

#include <QFileInfo>

#include "core/base/file_io.h"
#include "tests/ui/qt_test_env.h"
#include "ui/local_agent.h"

using namespace crucible;
using namespace crucible::ui;

TEST(LocalAgent, StartsAnswersOnlyItsTokenAndStops) {
    const QString program = QStringLiteral(CRUCIBLE_BINARY_DIR "/app/agent/crucible-agent");
    if (!QFileInfo(program).isExecutable())
        GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    LocalAgent agent(program, QString::fromStdString(path_to_utf8(dir / "agent")));
    bool ok = false;
    QString failure;
    QObject::connect(&agent, &LocalAgent::started_ok, [&] { ok = true; });
    QObject::connect(&agent, &LocalAgent::failed, [&](const QString& m) { failure = m; });
    agent.start();
    ASSERT_TRUE(uitest::wait_for([&] { return ok || !failure.isEmpty(); }, 30000));
    ASSERT_TRUE(ok) << failure.toStdString();
    EXPECT_EQ(agent.endpoint().url.rfind("http://127.0.0.1:", 0), 0u);
    EXPECT_EQ(agent.endpoint().token.size(), 64u);
    const Json info = net::ApiClient(agent.endpoint()).get("/v1/info");
    EXPECT_TRUE(info.contains("version"));
    net::RemoteEndpoint wrong = agent.endpoint();
    wrong.token = "not-the-token";
    try {
        net::ApiClient(wrong).get("/v1/info");
        ADD_FAILURE() << "a wrong token was accepted";
    } catch (const net::ApiError& e) {
        EXPECT_EQ(e.status(), 401);
    }
    agent.stop();
    EXPECT_FALSE(agent.running());
    EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();
}
