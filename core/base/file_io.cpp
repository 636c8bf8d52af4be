#include "core/base/file_io.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <system_error>

#include "core/base/direct_write.h"
#include "core/base/error.h"

namespace crucible {

std::string path_to_utf8(const std::filesystem::path& path) {
    auto u8 = path.u8string();
    return std::string(u8.begin(), u8.end());
}

std::string path_to_generic_utf8(const std::filesystem::path& path) {
    auto u8 = path.generic_u8string();
    return std::string(u8.begin(), u8.end());
}

std::filesystem::path path_from_utf8(std::string_view utf8) {
    if (!is_valid_utf8(utf8)) throw InputError("", "path is not valid UTF-8");
    std::u8string u8(utf8.begin(), utf8.end());
    return std::filesystem::path(u8);
}

std::string read_file_bytes_limited(const std::filesystem::path& path, std::uint64_t max_bytes) {
    const std::string where = path_to_utf8(path);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError(where, "is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(where, "cannot open file");
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::uint64_t>(in.tellg());
    if (size > max_bytes)
        throw InputError(where, "file is " + std::to_string(size) + " bytes, over the limit of " +
                                    std::to_string(max_bytes));
    in.seekg(0, std::ios::beg);
    std::string bytes(size, '\0');
    if (size > 0 && !in.read(bytes.data(), static_cast<std::streamsize>(size)))
        throw InputError(where, "cannot read file");
    return bytes;
}

std::string read_file_bytes(const std::filesystem::path& path) {
    return read_file_bytes_limited(path, std::uint64_t{1} << 40);
}

namespace {

// <path>.tmp-<pid>-<n>: unique within the process and across processes.
std::filesystem::path temp_name_for(const std::filesystem::path& path) {
    static std::atomic<unsigned> counter{0};
    auto temp = path;
    temp += ".tmp-" + std::to_string(platform::process_id()) + "-" + std::to_string(counter++);
    return temp;
}

}  // namespace

void write_file_durably(const std::filesystem::path& path, std::string_view bytes,
                        const std::string& where) {
    // Past the file cache where the file system allows (direct_write.h); small files keep the
    // cache, whose cost is small and which spares them a wait for the device.
    if (bytes.size() >= kDirectWriteMinimum && write_file_direct(path, bytes)) return;
    {
        errno = 0;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out)
            throw Error(where + ": cannot create " + path_to_utf8(path.filename()) + ": " +
                        std::generic_category().message(errno ? errno : EIO));
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.flush();
        if (!out)
            throw Error(where +
                        ": write failed: " + std::generic_category().message(errno ? errno : EIO));
    }
    platform::fsync_file(path);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
    const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::filesystem::create_directories(folder);
    const auto temp = temp_name_for(path);
    const std::string where = path_to_utf8(path);
    try {
        write_file_durably(temp, bytes, where);
        platform::replace_file(temp, path);
        platform::fsync_folder(folder);
    } catch (...) {
        std::error_code ec;
        std::filesystem::remove(temp, ec);
        throw;
    }
}

void link_or_copy_atomically(const std::filesystem::path& source,
                             const std::filesystem::path& target) {
    const auto temp = temp_name_for(target);
    std::error_code ec;
    std::filesystem::create_hard_link(source, temp, ec);
    if (ec) {
        ec.clear();
        std::filesystem::copy_file(source, temp, ec);
        if (!ec) platform::fsync_file(temp);
    }
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(temp, ignored);  // a copy cut off part way
        throw Error(path_to_utf8(target) + ": cannot link or copy " + path_to_utf8(source) + ": " +
                    ec.message());
    }
    try {
        platform::replace_file(temp, target);
        platform::fsync_folder(target.has_parent_path() ? target.parent_path()
                                                        : std::filesystem::path("."));
    } catch (...) {
        std::filesystem::remove(temp, ec);
        throw;
    }
}

bool is_path_inside(const std::filesystem::path& root, const std::filesystem::path& candidate) {
    std::error_code ec;
    auto r = std::filesystem::weakly_canonical(std::filesystem::absolute(root, ec), ec);
    auto c = std::filesystem::weakly_canonical(std::filesystem::absolute(candidate, ec), ec);
    if (ec) return false;
    auto rel = c.lexically_relative(r);
    if (rel.empty() || rel == ".") return false;
    auto first = *rel.begin();
    return first != ".." && !rel.is_absolute();
}

}  // namespace crucible
