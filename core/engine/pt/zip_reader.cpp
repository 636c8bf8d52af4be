#include "core/engine/pt/zip_reader.h"

#include <array>
#include <limits>

#include "core/base/error.h"

namespace crucible::engine {
namespace {

constexpr std::uint32_t kLocalHeaderSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64EndSig = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kEndSize = 22;
constexpr std::size_t kCentralSize = 46;
constexpr std::size_t kLocalSize = 30;
constexpr std::size_t kZip64EndSize = 56;
constexpr std::size_t kZip64LocatorSize = 20;

std::uint16_t u16(std::string_view b, std::uint64_t at) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(b[at]) |
                                      (static_cast<unsigned char>(b[at + 1]) << 8));
}
std::uint32_t u32(std::string_view b, std::uint64_t at) {
    return static_cast<std::uint32_t>(u16(b, at)) |
           (static_cast<std::uint32_t>(u16(b, at + 2)) << 16);
}
std::uint64_t u64(std::string_view b, std::uint64_t at) {
    return static_cast<std::uint64_t>(u32(b, at)) |
           (static_cast<std::uint64_t>(u32(b, at + 4)) << 32);
}

// True when [offset, offset + length) lies inside a buffer of `size` bytes (no overflow).
bool fits(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
    return offset <= size && length <= size - offset;
}

std::string hex_offset(std::uint64_t offset) {
    return "offset " + std::to_string(offset);
}

bool name_escapes(std::string_view name) {
    if (name.empty()) return true;
    if (name.front() == '/' || name.front() == '\\') return true;
    if (name.size() >= 2 && name[1] == ':') return true;  // drive letter
    for (char c : name) {
        if (c == '\0' || c == '\\') return true;
    }
    // Any ".." path component.
    std::size_t start = 0;
    while (start <= name.size()) {
        std::size_t end = name.find('/', start);
        if (end == std::string_view::npos) end = name.size();
        if (name.substr(start, end - start) == "..") return true;
        start = end + 1;
    }
    return false;
}

const std::array<std::uint32_t, 256>& crc_table() {
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    return table;
}

}  // namespace

std::uint32_t zip_crc32(std::string_view data) {
    const auto& table = crc_table();
    std::uint32_t c = 0xFFFFFFFFu;
    for (char ch : data)
        c = table[(c ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

bool looks_like_zip(std::string_view bytes) {
    if (bytes.size() < 4) return false;
    const std::uint32_t sig = u32(bytes, 0);
    return sig == kLocalHeaderSig || sig == kEndSig;
}

ZipArchive ZipArchive::open(std::shared_ptr<const std::string> bytes, std::string where,
                            const ZipLimits& limits) {
    if (!bytes) throw Error("ZipArchive::open: no bytes");
    ZipArchive zip;
    zip.bytes_ = std::move(bytes);
    zip.where_ = std::move(where);
    const std::string_view b(*zip.bytes_);
    const std::uint64_t size = b.size();
    auto fail = [&](const std::string& what) -> InputError { return InputError(zip.where_, what); };

    if (size == 0) throw fail("empty file (not a ZIP archive / PyTorch checkpoint)");
    if (size < kEndSize)
        throw fail("file of " + std::to_string(size) + " bytes is too short to be a ZIP archive");

    // End of central directory: the last signature whose comment reaches exactly the file end
    // (or, failing that, the last signature at all).
    std::uint64_t end_pos = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t lowest = size > kEndSize + 0xFFFF ? size - kEndSize - 0xFFFF : 0;
    for (std::uint64_t pos = size - kEndSize + 1; pos-- > lowest;) {
        if (u32(b, pos) != kEndSig) continue;
        if (pos + kEndSize + u16(b, pos + 20) == size) {
            end_pos = pos;
            break;
        }
        if (end_pos == std::numeric_limits<std::uint64_t>::max()) end_pos = pos;
    }
    if (end_pos == std::numeric_limits<std::uint64_t>::max())
        throw fail("not a ZIP archive (no end-of-central-directory record)");

    const std::uint16_t disk = u16(b, end_pos + 4);
    const std::uint16_t cd_disk = u16(b, end_pos + 6);
    std::uint64_t entries_here = u16(b, end_pos + 8);
    std::uint64_t entry_count = u16(b, end_pos + 10);
    std::uint64_t cd_size = u32(b, end_pos + 12);
    std::uint64_t cd_offset = u32(b, end_pos + 16);

    // ZIP64: a locator just before the end record points at the ZIP64 end record.
    if (end_pos >= kZip64LocatorSize && u32(b, end_pos - kZip64LocatorSize) == kZip64LocatorSig) {
        const std::uint64_t loc = end_pos - kZip64LocatorSize;
        const std::uint64_t z64 = u64(b, loc + 8);
        if (!fits(z64, kZip64EndSize, size) || u32(b, z64) != kZip64EndSig)
            throw fail("ZIP64 locator at " + hex_offset(loc) + " points to " + hex_offset(z64) +
                       ", which is not a ZIP64 end record inside the file");
        if (u32(b, z64 + 16) != 0 || u32(b, z64 + 20) != 0)
            throw fail("multi-disk ZIP archives are not supported");
        entries_here = u64(b, z64 + 24);
        entry_count = u64(b, z64 + 32);
        cd_size = u64(b, z64 + 40);
        cd_offset = u64(b, z64 + 48);
    } else if (disk != 0 || cd_disk != 0) {
        throw fail("multi-disk ZIP archives are not supported");
    } else if (entry_count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) {
        throw fail("ZIP64 archive without a ZIP64 end-record locator");
    }
    if (entries_here != entry_count) throw fail("multi-disk ZIP archives are not supported");
    if (!fits(cd_offset, cd_size, size))
        throw fail("central directory (" + hex_offset(cd_offset) + ", " + std::to_string(cd_size) +
                   " bytes) lies past the end of the " + std::to_string(size) + "-byte file");
    if (entry_count > limits.max_entries)
        throw fail("archive claims " + std::to_string(entry_count) + " entries (limit " +
                   std::to_string(limits.max_entries) + ")");
    if (entry_count > cd_size / kCentralSize)
        throw fail("archive claims " + std::to_string(entry_count) +
                   " entries but its central directory holds " + std::to_string(cd_size) +
                   " bytes");

    zip.entries_.reserve(static_cast<std::size_t>(entry_count));
    std::uint64_t pos = cd_offset;
    const std::uint64_t cd_end = cd_offset + cd_size;
    for (std::uint64_t i = 0; i < entry_count; ++i) {
        const std::string at =
            "central directory entry " + std::to_string(i) + " at " + hex_offset(pos);
        if (!fits(pos, kCentralSize, cd_end) || u32(b, pos) != kCentralSig)
            throw fail(at + ": bad signature or truncated central directory");
        ZipEntry e;
        e.flags = u16(b, pos + 8);
        e.method = u16(b, pos + 10);
        e.crc32 = u32(b, pos + 16);
        e.compressed_size = u32(b, pos + 20);
        e.size = u32(b, pos + 24);
        const std::uint16_t name_len = u16(b, pos + 28);
        const std::uint16_t extra_len = u16(b, pos + 30);
        const std::uint16_t comment_len = u16(b, pos + 32);
        const std::uint16_t start_disk = u16(b, pos + 34);
        e.local_header_offset = u32(b, pos + 42);
        const std::uint64_t var_len = std::uint64_t{name_len} + extra_len + comment_len;
        if (!fits(pos + kCentralSize, var_len, cd_end))
            throw fail(at + ": name/extra fields run past the central directory");
        if (name_len > limits.max_name_bytes)
            throw fail(at + ": entry name of " + std::to_string(name_len) + " bytes");
        e.name.assign(b.substr(pos + kCentralSize, name_len));

        // ZIP64 extended information: the 64-bit values present only for fields set to all ones.
        std::uint64_t x = pos + kCentralSize + name_len;
        const std::uint64_t x_end = x + extra_len;
        while (x + 4 <= x_end) {
            const std::uint16_t id = u16(b, x);
            const std::uint16_t len = u16(b, x + 2);
            if (x + 4 + len > x_end) throw fail(at + ": extra field runs past its area");
            if (id == 0x0001) {
                std::uint64_t f = x + 4;
                const std::uint64_t f_end = f + len;
                auto take = [&](std::uint64_t& value) {
                    if (f + 8 > f_end) throw fail(at + ": ZIP64 extra field too short");
                    value = u64(b, f);
                    f += 8;
                };
                if (e.size == 0xFFFFFFFFu) take(e.size);
                if (e.compressed_size == 0xFFFFFFFFu) take(e.compressed_size);
                if (e.local_header_offset == 0xFFFFFFFFu) take(e.local_header_offset);
            }
            x += 4 + std::uint64_t{len};
        }
        if (start_disk != 0 && start_disk != 0xFFFF) throw fail(at + ": entry on another disk");
        if (name_escapes(e.name))
            throw fail("entry name '" + e.name +
                       "' is not a plain relative path (absolute, '..', '\\' or NUL)");

        // Local header: its name and extra lengths decide where the data starts.
        const std::uint64_t lho = e.local_header_offset;
        if (!fits(lho, kLocalSize, size) || u32(b, lho) != kLocalHeaderSig)
            throw fail("entry '" + e.name + "': local header " + hex_offset(lho) +
                       " is missing or past the end");
        const std::uint64_t data = lho + kLocalSize + u16(b, lho + 26) + u16(b, lho + 28);
        if (!fits(data, e.compressed_size, size))
            throw fail("entry '" + e.name + "': data (" + hex_offset(data) + ", " +
                       std::to_string(e.compressed_size) + " bytes) runs past the end of the file");
        e.data_offset = data;
        if (!zip.by_name_.emplace(e.name, zip.entries_.size()).second)
            throw fail("duplicate entry name '" + e.name + "'");
        zip.entries_.push_back(std::move(e));
        pos += kCentralSize + var_len;
    }
    return zip;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
    auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::string_view ZipArchive::read(const ZipEntry& e, bool verify_crc) const {
    if (e.flags & 0x0001) throw InputError(where_, "entry '" + e.name + "' is encrypted");
    if (e.method == 8)
        throw InputError(
            where_, "entry '" + e.name +
                        "' is deflate-compressed; PyTorch checkpoints store entries uncompressed "
                        "(re-save the file with torch.save)");
    if (e.method != 0)
        throw InputError(where_, "entry '" + e.name + "' uses unsupported compression method " +
                                     std::to_string(e.method));
    if (e.size != e.compressed_size)
        throw InputError(where_, "stored entry '" + e.name + "' has compressed size " +
                                     std::to_string(e.compressed_size) + " != size " +
                                     std::to_string(e.size));
    const std::string_view data = std::string_view(*bytes_).substr(e.data_offset, e.size);
    if (verify_crc && zip_crc32(data) != e.crc32)
        throw InputError(
            where_, "entry '" + e.name + "' fails its CRC-32 check (file corrupt or truncated)");
    return data;
}

std::string_view ZipArchive::read(std::string_view name, bool verify_crc) const {
    const ZipEntry* e = find(name);
    if (!e) throw InputError(where_, "archive has no entry '" + std::string(name) + "'");
    return read(*e, verify_crc);
}

}  // namespace crucible::engine
