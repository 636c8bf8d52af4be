#include "core/jobs/blob_store.h"

#include <fstream>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"

namespace crucible::jobs {

BlobStore::BlobStore(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_ / "partial");
    std::filesystem::create_directories(dir_ / "owners");
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

bool BlobStore::owned_by(const std::string& sha256, const std::string& owner) const {
    if (!is_valid_hash(sha256) || owner.empty()) return false;
    std::ifstream in(dir_ / "owners" / sha256, std::ios::binary);
    std::string line;
    while (std::getline(in, line))
        if (line == owner) return true;
    return false;
}

bool BlobStore::visible_to(const std::string& sha256, const net::Caller& caller) const {
    if (!has(sha256)) return false;
    return caller.is_admin() || (caller.may_write() && owned_by(sha256, caller.name));
}

void BlobStore::add_owner(const std::string& sha256, const std::string& owner) {
    if (owner.empty() || owned_by(sha256, owner)) return;
    const auto file = dir_ / "owners" / sha256;
    std::error_code ec;
    std::string text = std::filesystem::exists(file, ec) ? read_file_bytes(file) : std::string();
    text += owner + "\n";
    write_file_atomically(dir_ / "owners" / sha256, text);
    std::error_code size_ec;
    const auto size = std::filesystem::file_size(path(sha256), size_ec);
    std::lock_guard usage_lock(usage_mutex_);
    if (!size_ec && usage_time_ > 0) usage_[owner] += size;
}

std::filesystem::path BlobStore::partial_path(const std::string& sha256,
                                              const std::string& owner) const {
    return dir_ / "partial" / (sha256 + "@" + owner);
}

std::uint64_t BlobStore::partial_size(const std::string& sha256, const std::string& owner) const {
    std::error_code ec;
    auto n = std::filesystem::file_size(partial_path(sha256, owner), ec);
    return ec ? 0 : n;
}

void BlobStore::adopt_part(const std::filesystem::path& part, const std::string& sha256,
                           const std::string& owner, const std::string& field) {
    std::error_code ec;
    std::string actual = sha256_file(part);
    if (actual != sha256) {
        std::filesystem::remove(part, ec);
        throw InputError(field, "the uploaded bytes hash to " + actual + ", not " + sha256 +
                                    "; the upload was discarded, send it again");
    }
    if (has(sha256)) {
        std::filesystem::remove(part, ec);  // the same bytes are stored already
    } else {
        platform::fsync_file(part);
        platform::replace_file(part, path(sha256));
    }
    add_owner(sha256, owner);
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

BlobStore::WriteResult BlobStore::write_chunk(const std::string& sha256, const std::string& owner,
                                              std::uint64_t offset, std::uint64_t total,
                                              std::string_view data) {
    if (!is_valid_hash(sha256)) throw InputError("sha256", "expected 64 lower-case hex digits");
    std::lock_guard lock(mutex_);
    if (has(sha256) && owned_by(sha256, owner)) return WriteResult::Stored;
    auto part = partial_path(sha256, owner);
    append_part(part, offset, total, data);
    if (offset + data.size() < total) return WriteResult::Partial;
    adopt_part(part, sha256, owner, "body");
    return WriteResult::Stored;
}

bool BlobStore::is_valid_upload_id(const std::string& id) {
    if (id.size() < 32 || id.size() > 64) return false;
    for (char c : id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

std::filesystem::path BlobStore::upload_path(const std::string& id,
                                             const std::string& owner) const {
    if (!is_valid_upload_id(id))
        throw InputError("upload id", "expected 32 to 64 lower-case hex digits");
    return dir_ / "partial" / ("upload-" + id + "@" + owner);
}

std::uint64_t BlobStore::upload_size(const std::string& id, const std::string& owner) const {
    std::error_code ec;
    auto n = std::filesystem::file_size(upload_path(id, owner), ec);
    return ec ? 0 : n;
}

void BlobStore::write_upload_chunk(const std::string& id, const std::string& owner,
                                   std::uint64_t offset, std::uint64_t total,
                                   std::string_view data) {
    auto part = upload_path(id, owner);
    std::lock_guard lock(mutex_);
    append_part(part, offset, total, data);
}

void BlobStore::finish_upload(const std::string& id, const std::string& owner,
                              const std::string& sha256) {
    if (!is_valid_hash(sha256)) throw InputError("sha256", "expected 64 lower-case hex digits");
    auto part = upload_path(id, owner);
    std::lock_guard lock(mutex_);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(part, ec)) {
        if (has(sha256) && owned_by(sha256, owner)) return;  // finished before (a retry)
        throw InputError("upload id", "no upload " + id + " on this agent; send its bytes first");
    }
    adopt_part(part, sha256, owner, "sha256");
}

void BlobStore::discard_upload(const std::string& id, const std::string& owner) {
    std::error_code ec;
    std::filesystem::remove(upload_path(id, owner), ec);
}

std::uint64_t BlobStore::total_bytes() const {
    std::uint64_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec))
        if (e.is_regular_file()) n += e.file_size();
    return n;
}

}  // namespace crucible::jobs

namespace crucible::jobs {

std::uint64_t BlobStore::bytes_used_by(const std::string& owner) const {
    std::error_code ec;
    std::lock_guard lock(usage_mutex_);
    const double now = unix_time_now();
    if (now - usage_time_ > 60) {
        usage_.clear();
        for (const auto& e : std::filesystem::directory_iterator(dir_ / "owners", ec)) {
            const std::string sha = path_to_utf8(e.path().filename());
            const auto size = std::filesystem::file_size(path(sha), ec);
            if (ec) continue;
            std::ifstream in(e.path(), std::ios::binary);
            std::string name;
            while (std::getline(in, name))
                usage_[name] += size;
        }
        usage_time_ = now;
    }
    std::uint64_t bytes = usage_.count(owner) ? usage_.at(owner) : 0;
    const std::string suffix = "@" + owner;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "partial", ec)) {
        const std::string name = path_to_utf8(e.path().filename());
        if (name.size() > suffix.size() && name.ends_with(suffix)) bytes += e.file_size(ec);
    }
    return bytes;
}

}  // namespace crucible::jobs
