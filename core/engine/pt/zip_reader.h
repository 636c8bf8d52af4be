#pragma once
// Read-only view of a ZIP archive held in memory. PyTorch checkpoints are ZIP files whose entries
// are stored uncompressed; Crucible looks entries up by name and never extracts anything to
// disk. Every size and offset is bounds-checked; bad input throws crucible::InputError naming the
// archive and what was met. Free of LibTorch so the fuzz sub-build can compile it.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace crucible::engine {

struct ZipEntry {
    std::string name;
    std::uint16_t method = 0;  // 0 stored, 8 deflate (refused), others refused
    std::uint16_t flags = 0;
    std::uint32_t crc32 = 0;
    std::uint64_t compressed_size = 0;
    std::uint64_t size = 0;  // uncompressed size
    std::uint64_t local_header_offset = 0;
    std::uint64_t data_offset = 0;  // first byte of the entry's data in the archive
};

struct ZipLimits {
    std::uint64_t max_entries = 1'000'000;
    std::size_t max_name_bytes = 4096;
};

class ZipArchive {
  public:
    // Parses the central directory of `bytes`. `where` (usually the file path) leads every error
    // message. The archive shares ownership of the bytes.
    static ZipArchive open(std::shared_ptr<const std::string> bytes, std::string where,
                           const ZipLimits& limits = {});

    const std::string& where() const { return where_; }
    const std::vector<ZipEntry>& entries() const { return entries_; }
    // nullptr when no entry has exactly this name.
    const ZipEntry* find(std::string_view name) const;
    // The entry's bytes (a view into the archive). Refuses compressed or encrypted entries and
    // checks the CRC-32 when `verify_crc`.
    std::string_view read(const ZipEntry& entry, bool verify_crc = true) const;
    // Same by name; InputError when missing.
    std::string_view read(std::string_view name, bool verify_crc = true) const;

  private:
    std::shared_ptr<const std::string> bytes_;
    std::string where_;
    std::vector<ZipEntry> entries_;
    std::unordered_map<std::string, std::size_t> by_name_;
};

// CRC-32 (IEEE, as in ZIP).
std::uint32_t zip_crc32(std::string_view data);

// True when the bytes start with a ZIP local header or end-of-directory signature.
bool looks_like_zip(std::string_view bytes);

}  // namespace crucible::engine
