// "This computer": the studio starts a private crucible-agent on 127.0.0.1 with a fresh token,
// reaches it through the core/net client; a second studio adopts the agent still running, and
// the agent ends by itself once idle. Needs the crucible-agent of this build (built with the
// studio in CI; the test says so and skips when it is absent).
#include <gtest/gtest.h>

#include <QFileInfo>

#include "core/base/file_io.h"
#include "core/base/secret_store.h"
#include "tests/support/built_programs.h"
#include "tests/ui/qt_test_env.h"
#include "ui/local_agent.h"

using namespace crucible;
using namespace crucible::ui;

TEST(LocalAgent, StartsAnswersOnlyItsTokenAndStops) {
    const QString program = QString::fromStdString(crucible::path_to_utf8(
        crucible::test_support::built_program("crucible-agent", "app/agent")));
    if (!QFileInfo(program).isExecutable())
        GTEST_SKIP() << "crucible-agent not built in " << CRUCIBLE_BINARY_DIR;
    const auto dir = uitest::temp_dir();
    LocalAgent agent(program, QString::fromStdString(path_to_utf8(dir / "agent")));
    agent.set_idle_exit(3);
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
    EXPECT_FALSE(agent.adopted());

    // A studio opened later (another LocalAgent on the same data) adopts the running agent.
    LocalAgent later(program, QString::fromStdString(path_to_utf8(dir / "agent")));
    bool adopted = false;
    QObject::connect(&later, &LocalAgent::started_ok, [&] { adopted = true; });
    QObject::connect(&later, &LocalAgent::failed, [&](const QString& m) { failure = m; });
    later.start();
    ASSERT_TRUE(uitest::wait_for([&] { return adopted || !failure.isEmpty(); }, 30000));
    EXPECT_TRUE(later.adopted()) << failure.toStdString();
    EXPECT_EQ(later.endpoint().url, agent.endpoint().url);

    // Its token lost (another user's SecretStore, say): the running agent is not doubled by a
    // second one on the same data folder; the studio says what to do.
    SecretStore::open_default()->remove(later.secret_key());
    LocalAgent tokenless(program, QString::fromStdString(path_to_utf8(dir / "agent")));
    QString refused;
    QObject::connect(&tokenless, &LocalAgent::failed, [&](const QString& m) { refused = m; });
    tokenless.start();
    ASSERT_TRUE(uitest::wait_for([&] { return !refused.isEmpty() || tokenless.ready(); }, 30000));
    EXPECT_FALSE(tokenless.ready());
    EXPECT_TRUE(refused.contains("answers at")) << refused.toStdString();

    agent.stop();
    later.stop();
    EXPECT_FALSE(agent.running());
    EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();
    // No job and no request for 3 s: the agent ends by itself.
    const auto endpoint = agent.endpoint();
    EXPECT_TRUE(uitest::wait_for(
        [&] {
            try {
                net::ApiClient(endpoint).health();
                return false;
            } catch (const std::exception&) {
                return true;
            }
        },
        20000))
        << "the agent still answers after its idle exit";
}
