#pragma once
// SHA-256 through OpenSSL's EVP interface: content addresses of blobs, dataset manifests,
// checkpoint checksums, token hashes.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace crucible {

class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, std::size_t size);
    void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
    // Lower-case hex digest; the object can not be updated afterwards.
    std::string hex_digest();

  private:
    struct State;
    std::unique_ptr<State> state_;
};

std::string sha256_hex(std::string_view bytes);
// Streams the file in 1 MiB chunks; InputError naming the file if it cannot be read.
std::string sha256_file(const std::filesystem::path& path);
// Compares two strings in time independent of where they differ (token checks).
bool constant_time_equal(std::string_view a, std::string_view b);
// Cryptographically random bytes as lower-case hex (tokens, temp names).
std::string random_hex(std::size_t bytes);
// HMAC-SHA256 of `message` under `key`: 32 raw bytes (the rendezvous proofs of
// core/jobs/rendezvous_tunnel.h).
std::string hmac_sha256(std::string_view key, std::string_view message);

}  // namespace crucible
