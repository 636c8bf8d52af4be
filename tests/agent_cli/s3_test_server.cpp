// POSIX-only test: runs moto, a Python server, through BSD sockets and fork/exec.
#include "tests/agent_cli/s3_test_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "core/base/file_io.h"
#include "tests/support/free_port.h"

namespace crucible::test_support {

namespace {

std::string between(const std::string& text, const std::string& open, const std::string& close) {
    const auto a = text.find(open);
    if (a == std::string::npos) return "";
    const auto b = text.find(close, a + open.size());
    return b == std::string::npos ? "" : text.substr(a + open.size(), b - a - open.size());
}

bool wait_readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
}

bool send_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
        const auto sent = ::send(fd, data, n, MSG_NOSIGNAL);
        if (sent <= 0) return false;
        data += sent;
        n -= static_cast<std::size_t>(sent);
    }
    return true;
}

}  // namespace

std::filesystem::path moto_server_program() {
    if (const char* env = std::getenv("CRUCIBLE_MOTO_SERVER"); env && *env) return env;
#ifdef CRUCIBLE_MOTO_SERVER
    if (std::string(CRUCIBLE_MOTO_SERVER).size() > 0) return CRUCIBLE_MOTO_SERVER;
#endif
    std::filesystem::path cache;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        cache = xdg;
    else if (const char* home = std::getenv("HOME"))
        cache = std::filesystem::path(home) / ".cache";
    return cache / "crucible" / "moto-5.2.5" / "bin" / "moto_server";
}

std::optional<std::string> moto_missing() {
    const auto program = moto_server_program();
    std::error_code ec;
    if (std::filesystem::exists(program, ec)) return std::nullopt;
    return "the S3 test server moto_server is not at " + path_to_utf8(program) +
           ": install it with `bash installer/setup.sh test` (it makes that virtual environment "
           "with PyPI's moto[server]), or point CRUCIBLE_MOTO_SERVER at a moto_server";
}

MotoServer::MotoServer(const std::filesystem::path& log_file) {
    if (auto why = moto_missing()) throw std::runtime_error(*why);
    port_ = free_loopback_port();
    ChildOptions o;
    o.program = moto_server_program();
    o.args = {"-H", "127.0.0.1", "-p", std::to_string(port_)};
    // Signatures are checked after the first three requests (which make the access key).
    o.env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3";
    o.log_file = log_file;
    child_ = ChildProcess::start(o);

    httplib::Client iam("127.0.0.1", port_);
    iam.set_connection_timeout(std::chrono::seconds(2));
    // moto routes a request by the service its credential scope names; unsigned ones count
    // against INITIAL_NO_AUTH_ACTION_COUNT.
    const httplib::Headers scope = {
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=setup/20240101/us-east-1/iam/aws4_request, "
         "SignedHeaders=host, Signature=none"}};
    auto call = [&](const std::string& query) {
        auto r = iam.Get("/?Version=2010-05-08&" + query, scope);
        if (!r || r->status != 200)
            throw std::runtime_error("moto IAM " + query + ": " +
                                     (r ? r->body : httplib::to_string(r.error())));
        return r->body;
    };
    bool up = false;
    for (int i = 0; i < 300 && !up; ++i) {
        if (child_->poll())
            throw std::runtime_error("moto_server ended at start: " + read_file_bytes(log_file));
        up = static_cast<bool>(iam.Get("/moto-api/"));
        if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!up) throw std::runtime_error("moto_server did not answer: " + read_file_bytes(log_file));
    call("Action=CreateUser&UserName=crucible");
    call(
        "Action=PutUserPolicy&UserName=crucible&PolicyName=s3&PolicyDocument=" +
        net::s3_uri_encode(
            R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]})",
            false));
    const std::string key = call("Action=CreateAccessKey&UserName=crucible");
    credentials_ = {between(key, "<AccessKeyId>", "</AccessKeyId>"),
                    between(key, "<SecretAccessKey>", "</SecretAccessKey>")};
    if (credentials_.access_key_id.empty()) throw std::runtime_error("moto made no key: " + key);
}

MotoServer::~MotoServer() {
    if (child_) {
        child_->kill();
        child_->wait();
    }
}

TamperProxy::TamperProxy(int upstream_port) : upstream_port_(upstream_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        throw std::runtime_error("TamperProxy: cannot listen on 127.0.0.1");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
}

TamperProxy::~TamperProxy() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (auto& t : connections_)
        if (t.joinable()) t.join();
    ::close(listener_);
}

void TamperProxy::serve() {
    while (!stop_) {
        if (!wait_readable(listener_, 20)) continue;
        const int client = ::accept(listener_, nullptr, nullptr);
        if (client >= 0) connections_.emplace_back([this, client] { relay(client); });
    }
}

void TamperProxy::relay(int client) {
    const int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(upstream_port_));
    if (::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(upstream);
        ::close(client);
        return;
    }
    // Answers flow back untouched on a thread of their own.
    std::thread back([&] {
        char buf[65536];
        while (!stop_) {
            if (!wait_readable(upstream, 20)) continue;
            const auto n = ::recv(upstream, buf, sizeof buf, 0);
            if (n <= 0 || !send_all(client, buf, static_cast<std::size_t>(n))) break;
        }
        ::shutdown(client, SHUT_RDWR);
    });
    std::string pending;
    char buf[65536];
    auto fill = [&]() {
        while (!stop_) {
            if (!wait_readable(client, 20)) continue;
            const auto n = ::recv(client, buf, sizeof buf, 0);
            if (n <= 0) return false;
            pending.append(buf, static_cast<std::size_t>(n));
            return true;
        }
        return false;
    };
    bool open = true;
    while (open && !stop_) {
        std::size_t end;
        while ((end = pending.find("\r\n\r\n")) == std::string::npos)
            if (!(open = fill())) break;
        if (!open) break;
        std::string head = pending.substr(0, end + 4);
        pending.erase(0, end + 4);
        requests_++;
        if (fail_next_ > 0) {
            fail_next_--;
            failed_++;
            const std::string answer =
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
                "Connection: close\r\nContent-Length: 59\r\n\r\n"
                "<Error><Code>ServiceUnavailable</Code><Message/></Error>\n\n\n\n";
            send_all(client, answer.data(), answer.size());
            break;
        }
        std::uint64_t length = 0;
        for (const char* name : {"\r\nContent-Length:", "\r\ncontent-length:"})
            if (auto at = head.find(name); at != std::string::npos)
                length = std::strtoull(head.c_str() + at + std::string(name).size(), nullptr, 10);
        const std::string line = head.substr(0, head.find("\r\n"));
        const bool corrupt =
            corrupt_part_ > 0 && corrupt_times_ != 0 && line.rfind("PUT ", 0) == 0 &&
            line.find("partNumber=" + std::to_string(corrupt_part_.load()) + "&") !=
                std::string::npos;
        if (!send_all(upstream, head.data(), head.size())) break;
        std::uint64_t sent = 0;
        bool flipped = false;
        while (sent < length) {
            if (pending.empty() && !(open = fill())) break;
            const std::size_t take =
                static_cast<std::size_t>(std::min<std::uint64_t>(pending.size(), length - sent));
            if (corrupt && !flipped && take > 0) {
                pending[0] = static_cast<char>(pending[0] ^ 0x5a);
                flipped = true;
                corrupted_++;
                if (corrupt_times_ > 0) corrupt_times_--;
            }
            if (!send_all(upstream, pending.data(), take)) {
                open = false;
                break;
            }
            pending.erase(0, take);
            sent += take;
        }
    }
    ::shutdown(upstream, SHUT_RDWR);
    back.join();
    ::close(upstream);
    ::close(client);
}

}  // namespace crucible::test_support
