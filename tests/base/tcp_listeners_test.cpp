// The system's table of TCP listeners (core/base/tcp_listeners.h), as a launcher reads it to find
// the port Gloo's listener took on a rank's own loopback address.
#include "core/base/tcp_listeners.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace crucible {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

TEST(TcpListeners, FindsThePortOfAListenerOnItsOwnAddressOnly) {
    asio::io_context io;
    // 127.91.0.0/16 is this test's own: Linux answers for all of 127/8, Windows too.
    const std::string address = "127.91.0.7";
    EXPECT_EQ(listening_tcp_port(address), std::nullopt);
    tcp::acceptor first(io, tcp::endpoint(asio::ip::make_address_v4(address), 0));
    const int port = first.local_endpoint().port();
    EXPECT_EQ(listening_tcp_port(address), port);
    // A second listener on the same address: the lowest port, whichever was first.
    tcp::acceptor second(io, tcp::endpoint(asio::ip::make_address_v4(address), 0));
    const int other = second.local_endpoint().port();
    EXPECT_EQ(listening_tcp_port(address), std::min(port, other));
    // A wildcard listener is not this address's, nor are the neighbours' addresses.
    tcp::acceptor wildcard(io, tcp::endpoint(asio::ip::address_v4::any(), 0));
    EXPECT_EQ(listening_tcp_port("127.91.0.8"), std::nullopt);
    EXPECT_EQ(listening_tcp_port(address), std::min(port, other));
    // A socket that is bound but not listening is not a listener.
    tcp::socket bound(io);
    bound.open(tcp::v4());
    bound.bind(tcp::endpoint(asio::ip::make_address_v4("127.91.0.9"), 0));
    EXPECT_EQ(listening_tcp_port("127.91.0.9"), std::nullopt);
    first.close();
    second.close();
    EXPECT_EQ(listening_tcp_port(address), std::nullopt);
}

TEST(TcpListeners, AnythingButADottedAddressFindsNothing) {
    for (const char* text : {"", "localhost", "127.0.0", "127.0.0.1.5", "::1", "256.1.1.1",
                             "127.0.0.1 ", "数据集", "\xff\xfe"})
        EXPECT_EQ(listening_tcp_port(text), std::nullopt) << text;
}

}  // namespace
}  // namespace crucible
