#pragma once
// Content-addressed blobs on the agent (<data>/blobs/<sha256>): uploads are resumable (a partial
// file grows under blobs/partial/ with each Content-Range chunk) and verified against their
// hash before they become visible. Each blob records who uploaded it (blobs/owners/<sha256>):
// a user sees and uses only the blobs they sent themselves, so nobody learns whether the agent
// holds a file they do not have. A second owner of the same content sends it once too (the
// proof that they have it); the bytes are checked and dropped, and the blob is stored once.
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/net/auth_gate.h"

namespace crucible::jobs {

class BlobStore {
  public:
    explicit BlobStore(std::filesystem::path dir);

    static bool is_valid_hash(const std::string& sha256);  // 64 lower-case hex digits
    bool has(const std::string& sha256) const;
    // The blob is stored and `caller` may use it: they uploaded it, or they are an admin.
    bool visible_to(const std::string& sha256, const net::Caller& caller) const;
    bool owned_by(const std::string& sha256, const std::string& owner) const;
    std::filesystem::path path(const std::string& sha256) const;
    // Bytes `owner` already sent of an unfinished upload (0 when none).
    std::uint64_t partial_size(const std::string& sha256, const std::string& owner) const;

    enum class WriteResult { Stored, Partial };
    // Writes bytes [offset, offset+data.size()) of a blob of `total` bytes. The offset must
    // equal the partial size (uploads are sequential and resumable). When the last byte
    // arrives the hash is checked; a mismatch discards the upload. Throws InputError with what
    // to fix.
    WriteResult write_chunk(const std::string& sha256, const std::string& owner,
                            std::uint64_t offset, std::uint64_t total, std::string_view data);

    // Uploads whose hash the client does not know yet (it hashes a large file while sending it):
    // bytes go to a partial file named by a client-chosen id (32 to 64 lower-case hex digits),
    // resumable the same way, and become a blob when finish_upload() names the hash and the
    // content matches it.
    // Upload ids belong to their owner: another user's id is another upload.
    static bool is_valid_upload_id(const std::string& id);
    std::uint64_t upload_size(const std::string& id, const std::string& owner) const;
    void write_upload_chunk(const std::string& id, const std::string& owner, std::uint64_t offset,
                            std::uint64_t total, std::string_view data);
    // Verifies the upload against `sha256` (InputError and the upload is discarded on a
    // mismatch) and stores it as that blob, owned by `owner` too.
    void finish_upload(const std::string& id, const std::string& owner, const std::string& sha256);
    void discard_upload(const std::string& id, const std::string& owner);

    std::uint64_t total_bytes() const;
    // Bytes of the blobs `owner` sent (each blob counted whole for every owner) and of their
    // unfinished uploads: what a per-user quota counts. Cached for a minute.
    std::uint64_t bytes_used_by(const std::string& owner) const;

  private:
    std::filesystem::path upload_path(const std::string& id, const std::string& owner) const;
    std::filesystem::path partial_path(const std::string& sha256, const std::string& owner) const;
    // Checks `part` against `sha256` (discarding it on a mismatch), then keeps it as the blob
    // (or drops it when the blob exists) and records `owner`. Under mutex_.
    void adopt_part(const std::filesystem::path& part, const std::string& sha256,
                    const std::string& owner, const std::string& field);
    void add_owner(const std::string& sha256, const std::string& owner);
    // Appends [offset, offset+size) to `part` (which must hold exactly `offset` bytes).
    static void append_part(const std::filesystem::path& part, std::uint64_t offset,
                            std::uint64_t total, std::string_view data);

    std::filesystem::path dir_;
    mutable std::mutex mutex_;
    mutable std::mutex usage_mutex_;
    mutable std::map<std::string, std::uint64_t> usage_;  // owner -> bytes of finished blobs
    mutable double usage_time_ = 0;                       // when usage_ was counted
};

}  // namespace crucible::jobs
