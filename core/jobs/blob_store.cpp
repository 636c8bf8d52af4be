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

BlobStore::WriteResult BlobStore::write_chunk(const std::string& sha256, std::uint64_t offset,
                                              std::uint64_t total, std::string_view data) {
    if (!is_valid_hash(sha256)) throw InputError("sha256", "expected 64 lower-case hex digits");
    std::lock_guard lock(mutex_);
    if (has(sha256)) return WriteResult::Stored;
    auto part = dir_ / "partial" / sha256;
    std::uint64_t have = partial_size(sha256);
    if (offset != have)
        throw InputError("Content-Range", "upload must continue at byte " + std::to_string(have) +
                                              ", not " + std::to_string(offset));
    if (offset + data.size() > total)
        throw InputError("Content-Range", "chunk runs past the declared total size");
    {
        std::ofstream out(part, std::ios::binary | std::ios::app);
        out.write(data.data(), static_cast<std::streamsize>(data.size()));
        if (!out) throw Error("cannot write blob data (disk full?)");
    }
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

std::uint64_t BlobStore::total_bytes() const {
    std::uint64_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec))
        if (e.is_regular_file()) n += e.file_size();
    return n;
}

}  // namespace crucible::jobs
