// POSIX-only test: its server (s3_test_server.cpp) runs moto through BSD sockets and fork/exec.
#pragma once
// The S3-compatible server of the checkpoint-mirror tests: moto in server mode (PyPI's
// moto[server], installed by `bash installer/setup.sh test` into a virtual environment of its
// own) started on a free loopback port, with signature checks on: the first three requests,
// unsigned, make an IAM user allowed s3:* and its access key, and from then on every request
// must carry a valid SigV4 signature. A tampering proxy goes between a client and the server to
// alter bytes on the way or answer 503 (POSIX).
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/child_process.h"
#include "core/net/s3_client.h"

namespace crucible::test_support {

// Where moto_server is looked for: $CRUCIBLE_MOTO_SERVER, else what setup.sh configured
// (CRUCIBLE_MOTO_SERVER at build time), else setup.sh's default place.
std::filesystem::path moto_server_program();
// Why moto cannot run here, naming the command that installs it; nullopt when it can. The tests
// FAIL with this message, never skip: CI runs setup.sh, which installs moto.
std::optional<std::string> moto_missing();

class MotoServer {
  public:
    // Starts moto and makes the access key; throws std::runtime_error with moto's log on failure.
    explicit MotoServer(const std::filesystem::path& log_file);
    ~MotoServer();
    MotoServer(const MotoServer&) = delete;
    MotoServer& operator=(const MotoServer&) = delete;

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
    int port() const { return port_; }
    const net::S3Credentials& credentials() const { return credentials_; }
    long pid() const { return child_ ? child_->pid() : 0; }

  private:
    std::unique_ptr<ChildProcess> child_;
    int port_ = 0;
    net::S3Credentials credentials_;
};

// A TCP proxy on 127.0.0.1 in front of `upstream_port` that reads each request's headers and
// then either forwards it (flipping one byte of the body of a chosen part upload) or answers
// 503 and closes the connection.
class TamperProxy {
  public:
    explicit TamperProxy(int upstream_port);
    ~TamperProxy();
    TamperProxy(const TamperProxy&) = delete;
    TamperProxy& operator=(const TamperProxy&) = delete;

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
    // Flips a byte in the next `times` uploads of part `number` (-1: every one).
    void corrupt_part(int number, int times) {
        corrupt_part_ = number;
        corrupt_times_ = times;
    }
    // Answers the next `count` requests with 503 Service Unavailable.
    void fail_next(int count) { fail_next_ = count; }
    int requests() const { return requests_; }
    int corrupted() const { return corrupted_; }
    int failed() const { return failed_; }

  private:
    void serve();
    void relay(int client);

    int listener_ = -1;
    int port_ = 0;
    int upstream_port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> corrupt_part_{0}, corrupt_times_{0}, fail_next_{0};
    std::atomic<int> requests_{0}, corrupted_{0}, failed_{0};
    std::thread thread_;
    std::vector<std::thread> connections_;
};

}  // namespace crucible::test_support
