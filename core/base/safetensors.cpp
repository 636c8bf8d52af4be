// safetensors dtypes and the SafetensorsFile reader object. Header validation lives in
// safetensors_parse.cpp, the writer in safetensors_write.cpp.
#include "core/base/safetensors.h"

#include <array>
#include <limits>
#include <utility>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/mapped_file.h"

namespace crucible {
namespace {

struct DtypeRow {
    SafetensorsDtype dtype;
    std::string_view name;
    unsigned bits;
};

constexpr std::array<DtypeRow, 20> kDtypes{{
    {SafetensorsDtype::BOOL, "BOOL", 8},       {SafetensorsDtype::U8, "U8", 8},
    {SafetensorsDtype::I8, "I8", 8},           {SafetensorsDtype::F8_E5M2, "F8_E5M2", 8},
    {SafetensorsDtype::F8_E4M3, "F8_E4M3", 8}, {SafetensorsDtype::F8_E8M0, "F8_E8M0", 8},
    {SafetensorsDtype::I16, "I16", 16},        {SafetensorsDtype::U16, "U16", 16},
    {SafetensorsDtype::F16, "F16", 16},        {SafetensorsDtype::BF16, "BF16", 16},
    {SafetensorsDtype::I32, "I32", 32},        {SafetensorsDtype::U32, "U32", 32},
    {SafetensorsDtype::F32, "F32", 32},        {SafetensorsDtype::F64, "F64", 64},
    {SafetensorsDtype::I64, "I64", 64},        {SafetensorsDtype::U64, "U64", 64},
    {SafetensorsDtype::C64, "C64", 64},        {SafetensorsDtype::F4, "F4", 4},
    {SafetensorsDtype::F6_E2M3, "F6_E2M3", 6}, {SafetensorsDtype::F6_E3M2, "F6_E3M2", 6},
}};

const DtypeRow& row_of(SafetensorsDtype dtype) {
    for (const auto& row : kDtypes)
        if (row.dtype == dtype) return row;
    throw Error("unknown SafetensorsDtype value " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace

const std::vector<SafetensorsDtype>& all_safetensors_dtypes() {
    static const std::vector<SafetensorsDtype> all = [] {
        std::vector<SafetensorsDtype> out;
        for (const auto& row : kDtypes)
            out.push_back(row.dtype);
        return out;
    }();
    return all;
}

std::string_view safetensors_dtype_name(SafetensorsDtype dtype) {
    return row_of(dtype).name;
}

std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view name) {
    for (const auto& row : kDtypes)
        if (row.name == name) return row.dtype;
    return std::nullopt;
}

unsigned safetensors_dtype_bits(SafetensorsDtype dtype) {
    return row_of(dtype).bits;
}

std::optional<std::uint64_t> safetensors_byte_size(SafetensorsDtype dtype, std::uint64_t numel) {
    const std::uint64_t bits = safetensors_dtype_bits(dtype);
    if (numel > std::numeric_limits<std::uint64_t>::max() / bits) return std::nullopt;
    const std::uint64_t total = numel * bits;
    if (total % 8 != 0) return std::nullopt;
    return total / 8;
}

std::uint64_t SafetensorsTensorInfo::numel() const {
    std::uint64_t n = 1;
    for (auto d : shape)
        n *= static_cast<std::uint64_t>(d);  // validated not to overflow
    return n;
}

SafetensorsFile::SafetensorsFile(std::shared_ptr<const void> owner,
                                 std::span<const std::byte> bytes, std::string where)
    : owner_(std::move(owner)), bytes_(bytes), where_(std::move(where)) {
    header_ = parse_safetensors(bytes_, where_);
    for (std::size_t i = 0; i < header_.tensors.size(); ++i)
        index_.emplace(header_.tensors[i].name, i);
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
    auto mapped = std::make_shared<const MappedFile>(path);
    const auto bytes = mapped->bytes();
    return SafetensorsFile(std::move(mapped), bytes, path_to_utf8(path));
}

SafetensorsFile SafetensorsFile::from_bytes(std::string bytes, const std::string& where) {
    auto owned = std::make_shared<const std::string>(std::move(bytes));
    const std::span<const std::byte> view{reinterpret_cast<const std::byte*>(owned->data()),
                                          owned->size()};
    return SafetensorsFile(std::move(owned), view, where);
}

SafetensorsFile SafetensorsFile::view(std::span<const std::byte> bytes, const std::string& where) {
    return SafetensorsFile(nullptr, bytes, where);
}

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> out;
    out.reserve(header_.tensors.size());
    for (const auto& t : header_.tensors)
        out.push_back(t.name);
    return out;
}

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

const SafetensorsTensorInfo& SafetensorsFile::at(std::string_view name) const {
    if (const auto* t = find(name)) return *t;
    throw InputError(where_, "no tensor named '" + std::string(name) + "'");
}

std::span<const std::byte> SafetensorsFile::data(const SafetensorsTensorInfo& tensor) const {
    const std::uint64_t start = 8 + header_.header_bytes + tensor.begin;
    if (tensor.end < tensor.begin || 8 + header_.header_bytes + tensor.end > bytes_.size())
        throw Error(where_ + ": tensor '" + tensor.name + "' is not a tensor of this file");
    return bytes_.subspan(static_cast<std::size_t>(start),
                          static_cast<std::size_t>(tensor.end - tensor.begin));
}

}  // namespace crucible
