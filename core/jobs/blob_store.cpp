#include "core/jobs/blob_store.h"

#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"

namespace crucible::jobs {

BlobStore::BlobStore(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_ / "partial");
}

bool BlobStore::is_valid_hash(const std::string& h) {
    if (h.size() != 64) return false;
    for (char c : h)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

std::filesystem::path BlobStore::path(const std::string& sha256) const {
    return dir_ / sha256;
}

bool BlobStore::has(const std::string& sha256) const {
    std::error_code ec;
    return is_valid_hash(sha256) && std::filesystem::is_regular_file(path(sha256), ec);
}

std::uint64_t BlobStore::partial_size(const std::string& sha256) const {
    std::error_code ec;
    auto n = std::filesystem::file_size(dir_ / "partial" / sha256, ec);
    return ec ? 0 : n;
}

void BlobStore::append_part(const std::filesystem::path& part, std::uint64_t offset,
                            std::uint64_t total, std::string_view data) {
    std::error_code ec;
    auto have = std::filesystem::file_size(part, ec);
    if (ec) have = 0;
    if (offset != have)
        throw InputError("Content-Range", "upload must continue at byte " + std::to_string(have) +
                                              ", not " + std::to_string(offset));
    if (offset + data.size() > total)
        throw InputError("Content-Range", "chunk runs past the declared total size");
    std::ofstream out(part, std::ios::binary | std::ios::app);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) throw Error("cannot write blob data (disk full?)");
}

BlobStore::WriteResult BlobStore::write_chunk(const std::string& sha256, std::uint64_t offset,
                                              std::uint64_t total, std::string_view data) {
    if (!is_valid_hash(sha256)) throw InputError("sha256", "expected 64 lower-case hex digits");
    std::lock_guard lock(mutex_);
    if (has(sha256)) return WriteResult::Stored;
    auto part = dir_ / "partial" / sha256;
    append_part(part, offset, total, data);
    if (offset + data.size() < total) return WriteResult::Partial;
    std::string actual = sha256_file(part);
    if (actual != sha256) {
        std::filesystem::remove(part);
        throw InputError("body", "content hash " + actual + " does not match the blob name " +
                                     sha256 + "; the upload was discarded, send it again");
    }
    platform::fsync_file(part);
    platform::replace_file(part, path(sha256));
    return WriteResult::Stored;
}

bool BlobStore::is_valid_upload_id(const std::string& id) {
    if (id.size() < 32 || id.size() > 64) return false;
    for (char c : id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

std::filesystem::path BlobStore::upload_path(const std::string& id) const {
    if (!is_valid_upload_id(id))
        throw InputError("upload id", "expected 32 to 64 lower-case hex digits");
    return dir_ / "partial" / ("upload-" + id);
}

std::uint64_t BlobStore::upload_size(const std::string& id) const {
    std::error_code ec;
    auto n = std::filesystem::file_size(upload_path(id), ec);
    return ec ? 0 : n;
}

void BlobStore::write_upload_chunk(const std::string& id, std::uint64_t offset, std::uint64_t total,
                                   std::string_view data) {
    auto part = upload_path(id);
    std::lock_guard lock(mutex_);
    append_part(part, offset, total, data);
}

void BlobStore::finish_upload(const std::string& id, const std::string& sha256) {
    if (!is_valid_hash(sha256)) throw InputError("sha256", "expected 64 lower-case hex digits");
    auto part = upload_path(id);
    std::lock_guard lock(mutex_);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(part, ec)) {
        if (has(sha256)) return;  // finished before (a retried request)
        throw InputError("upload id", "no upload " + id + " on this agent; send its bytes first");
    }
    if (has(sha256)) {
        std::filesystem::remove(part, ec);
        return;
    }
    std::string actual = sha256_file(part);
    if (actual != sha256) {
        std::filesystem::remove(part, ec);
        throw InputError("sha256", "the uploaded bytes hash to " + actual + ", not " + sha256 +
                                       "; the upload was discarded, send it again");
    }
    platform::fsync_file(part);
    platform::replace_file(part, path(sha256));
}

void BlobStore::discard_upload(const std::string& id) {
    std::error_code ec;
    std::filesystem::remove(upload_path(id), ec);
}

std::uint64_t BlobStore::total_bytes() const {
    std::uint64_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec))
        if (e.is_regular_file()) n += e.file_size();
    return n;
}

}  // namespace crucible::jobs
