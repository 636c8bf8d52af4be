#pragma once
// Content-addressed blobs on the agent (<data>/blobs/<sha256>): uploads are resumable (a partial
// file grows under blobs/partial/ with each Content-Range chunk) and verified against their
// hash before they become visible. Existing blobs are never sent again.
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace crucible::jobs {

class BlobStore {
  public:
    explicit BlobStore(std::filesystem::path dir);

    static bool is_valid_hash(const std::string& sha256);  // 64 lower-case hex digits
    bool has(const std::string& sha256) const;
    std::filesystem::path path(const std::string& sha256) const;
    // Bytes already received of an unfinished upload (0 when none).
    std::uint64_t partial_size(const std::string& sha256) const;

    enum class WriteResult { Stored, Partial };
    // Writes bytes [offset, offset+data.size()) of a blob of `total` bytes. The offset must
    // equal the partial size (uploads are sequential and resumable). When the last byte
    // arrives the hash is checked; a mismatch discards the upload. Throws InputError with what
    // to fix.
    WriteResult write_chunk(const std::string& sha256, std::uint64_t offset, std::uint64_t total,
                            std::string_view data);

    // Uploads whose hash the client does not know yet (it hashes a large file while sending it):
    // bytes go to a partial file named by a client-chosen id (32 to 64 lower-case hex digits),
    // resumable the same way, and become a blob when finish_upload() names the hash and the
    // content matches it.
    static bool is_valid_upload_id(const std::string& id);
    std::uint64_t upload_size(const std::string& id) const;
    void write_upload_chunk(const std::string& id, std::uint64_t offset, std::uint64_t total,
                            std::string_view data);
    // Verifies the upload against `sha256` (InputError and the upload is discarded on a
    // mismatch) and stores it as that blob. An upload of a blob that exists already is dropped.
    void finish_upload(const std::string& id, const std::string& sha256);
    void discard_upload(const std::string& id);

    std::uint64_t total_bytes() const;

  private:
    std::filesystem::path upload_path(const std::string& id) const;
    // Appends [offset, offset+size) to `part` (which must hold exactly `offset` bytes).
    static void append_part(const std::filesystem::path& part, std::uint64_t offset,
                            std::uint64_t total, std::string_view data);

    std::filesystem::path dir_;
    mutable std::mutex mutex_;
};

}  // namespace crucible::jobs
