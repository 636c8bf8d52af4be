#pragma once
// The safetensors file format (SPECS.md "safetensors"): an 8-byte little-endian header length
// N, N bytes of UTF-8 JSON describing each tensor (dtype, shape, data_offsets) plus an optional
// "__metadata__" string map, then the data buffer. No LibTorch here: the agent and the studio
// read headers and metadata too; core/engine/safetensors_torch.h converts to torch::Tensor.
//
// Reading is strict: every rule of the format is checked and a violation throws InputError
// naming the file (and the tensor, where there is one). Files are memory-mapped, not copied.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace crucible {

enum class SafetensorsDtype {
    BOOL,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    F64,
    I64,
    U64,
    C64,
    F4,
    F6_E2M3,
    F6_E3M2,
};

// Every dtype, in declaration order (for tests and tables).
const std::vector<SafetensorsDtype>& all_safetensors_dtypes();
// The header spelling ("F32", "BF16", ...).
std::string_view safetensors_dtype_name(SafetensorsDtype dtype);
// nullopt for an unknown spelling (the check is case-sensitive, as the format is).
std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view name);
// Bits per element: 4 for F4, 6 for F6_*, otherwise 8 x the byte size. Sub-byte dtypes are
// packed; a tensor of them must fill whole bytes (numel x bits divisible by 8), as in the
// reference implementation.
unsigned safetensors_dtype_bits(SafetensorsDtype dtype);
// Byte size of `numel` elements; nullopt when the bits do not fill whole bytes or overflow.
std::optional<std::uint64_t> safetensors_byte_size(SafetensorsDtype dtype, std::uint64_t numel);

// The largest header the reader accepts (the reference implementation's limit).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// One tensor of a file. Offsets are relative to the start of the data buffer.
struct SafetensorsTensorInfo {
    std::string name;
    SafetensorsDtype dtype = SafetensorsDtype::F32;
    std::vector<std::int64_t> shape;  // every dim >= 0; [] is a scalar
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t numel() const;
    std::uint64_t byte_size() const { return end - begin; }
};

// The validated header of a file.
struct SafetensorsHeader {
    std::vector<SafetensorsTensorInfo> tensors;  // file order: by data offset, ties in header order
    std::map<std::string, std::string> metadata;  // "__metadata__", empty when absent
    std::uint64_t header_bytes = 0;               // N, the JSON length (padding included)
    std::uint64_t data_bytes = 0;                 // size of the data buffer
};

// Parses and validates a whole file held in memory. `where` names it in messages (a path or
// "<memory>"). Throws InputError for any violation of the format.
SafetensorsHeader parse_safetensors(std::span<const std::byte> file, const std::string& where);

// A readable safetensors file: the validated header plus a view of the bytes, which are kept
// alive by the object (a memory map, an owned string, or, for view(), the caller).
// Copies share the underlying bytes.
class SafetensorsFile {
  public:
    // Memory-maps `path` and validates it. Throws InputError naming the file.
    static SafetensorsFile open(const std::filesystem::path& path);
    // Takes ownership of `bytes` (a whole file) and validates them.
    static SafetensorsFile from_bytes(std::string bytes, const std::string& where = "<memory>");
    // Validates bytes owned by the caller, which must outlive the returned object.
    static SafetensorsFile view(std::span<const std::byte> bytes,
                                const std::string& where = "<memory>");

    const std::string& where() const { return where_; }
    const std::vector<SafetensorsTensorInfo>& tensors() const { return header_.tensors; }
    std::vector<std::string> names() const;  // file order
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    const SafetensorsHeader& header() const { return header_; }
    std::size_t size() const { return header_.tensors.size(); }

    // nullptr when there is no tensor of that name.
    const SafetensorsTensorInfo* find(std::string_view name) const;
    // Throws InputError "<file>: no tensor named 'x'" when absent.
    const SafetensorsTensorInfo& at(std::string_view name) const;
    // The raw little-endian bytes of a tensor of this file (pointer + size, no copy).
    std::span<const std::byte> data(const SafetensorsTensorInfo& tensor) const;
    std::span<const std::byte> data(std::string_view name) const { return data(at(name)); }

  private:
    SafetensorsFile(std::shared_ptr<const void> owner, std::span<const std::byte> bytes,
                    std::string where);

    std::shared_ptr<const void> owner_;
    std::span<const std::byte> bytes_;
    std::string where_;
    SafetensorsHeader header_;
    std::map<std::string, std::size_t, std::less<>> index_;
};

// A tensor to write: raw little-endian, row-major, contiguous bytes.
struct SafetensorsTensorView {
    std::string name;
    SafetensorsDtype dtype = SafetensorsDtype::F32;
    std::vector<std::int64_t> shape;
    std::span<const std::byte> data;
};

// Serializes tensors (data laid out in the given order) and metadata into a whole file. The
// header is compact JSON padded with spaces to a multiple of 8; "__metadata__" is written only
// when `metadata` is not empty. Throws InputError naming the tensor for a duplicate or
// reserved name, non-UTF-8 text, a negative dim, or a data size that does not match the shape.
std::string write_safetensors_bytes(const std::vector<SafetensorsTensorView>& tensors,
                                    const std::map<std::string, std::string>& metadata = {});
// The same, written atomically (temp file + rename) to `path`.
void write_safetensors_file(const std::filesystem::path& path,
                            const std::vector<SafetensorsTensorView>& tensors,
                            const std::map<std::string, std::string>& metadata = {});

}  // namespace crucible
