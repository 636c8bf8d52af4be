// The client against an agent that sends broken event lines: a line that is not JSON, one
// nested 100,000 deep, one that is not an event. The stream skips them and delivers the good
// events; nothing is thrown out of the reader (the studio follows streams on its own threads).
#include <gtest/gtest.h>

#include <thread>

#include "core/net/api_client.h"
#include "core/net/http_server.h"

using namespace crucible;

TEST(ApiClientStream, BrokenEventLinesAreSkipped) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const std::string body =
        "id: 0\nevent: metric\ndata: {not json\n\n"
        "id: 1\nevent: metric\ndata: " +
        deep +
        "\n\n"
        "id: 2\nevent: metric\ndata: [1,2,3]\n\n"
        "id: 3\nevent: metric\ndata: 1e999999\n\n"
        "id: 4\nevent: status\ndata: {\"seq\":4,\"t\":1.0,\"kind\":\"status\","
        "\"state\":\"succeeded\"}\n\n";
    httplib::Server fake;
    net::serve_route(fake, net::routes::kJobEvents,
                     [&](const httplib::Request&, httplib::Response& res) {
                         res.set_content(body, "text/event-stream");
                     });
    const int port = fake.bind_to_any_port("127.0.0.1");
    std::thread serving([&] { fake.listen_after_bind(); });

    net::ApiClient client({"http://127.0.0.1:" + std::to_string(port), "tok", ""});
    std::vector<Event> seen;
    std::int64_t last = -1;
    EXPECT_NO_THROW(last = client.follow_events("j1", -1, [&](const Event& e) {
        seen.push_back(e);
        return true;
    }));
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].seq, 4);
    EXPECT_EQ(seen[0].kind, "status");
    EXPECT_EQ(last, 4);
    fake.stop();
    serving.join();
}
