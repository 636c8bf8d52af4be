#include "tests/support/free_port.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace crucible::test_support {

int free_loopback_port() {
    // Bind to port 0 and ask which port the system chose (Boost.Asio: BSD sockets and Winsock).
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
    return acceptor.local_endpoint().port();
}

}  // namespace crucible::test_support
