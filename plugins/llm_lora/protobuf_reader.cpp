#include "plugins/llm_lora/protobuf_reader.h"

#include <bit>
#include <limits>

#include "core/base/error.h"

namespace crucible::llm {
namespace {

const char* wire_name(WireType type) {
    switch (type) {
        case WireType::kVarint:
            return "varint";
        case WireType::kFixed64:
            return "64-bit";
        case WireType::kBytes:
            return "length-delimited";
        case WireType::kFixed32:
            return "32-bit";
    }
    return "?";
}

}  // namespace

std::uint64_t ProtoReader::read_varint(const char* what) {
    const std::uint64_t start = base_ + pos_;
    std::uint64_t value = 0;
    for (int i = 0; i < 10; ++i) {
        if (pos_ >= data_.size())
            throw InputError(where_, std::string("truncated ") + what + " at byte " +
                                         std::to_string(start) + " (the data ends inside it)");
        const auto b = static_cast<unsigned char>(data_[pos_++]);
        // The tenth byte holds the 64th bit only.
        if (i == 9 && b > 1)
            throw InputError(where_, std::string(what) + " at byte " + std::to_string(start) +
                                         " does not fit in 64 bits");
        value |= static_cast<std::uint64_t>(b & 0x7F) << (7 * i);
        if ((b & 0x80) == 0) return value;
    }
    throw InputError(where_, std::string(what) + " at byte " + std::to_string(start) +
                                 " is longer than 10 bytes");
}

bool ProtoReader::next(ProtoField& field) {
    if (pos_ >= data_.size()) return false;
    field = ProtoField{};
    field.offset = base_ + pos_;
    const std::uint64_t tag = read_varint("field tag");
    const std::uint64_t number = tag >> 3;
    const auto wire = static_cast<unsigned>(tag & 7);
    if (number == 0 || number > 0x1FFFFFFF)
        throw InputError(where_, "field number " + std::to_string(number) + " at byte " +
                                     std::to_string(field.offset) + " is not valid");
    field.number = static_cast<std::uint32_t>(number);
    const std::string at =
        "field " + std::to_string(number) + " at byte " + std::to_string(field.offset);
    auto fixed = [&](std::size_t n) {
        if (data_.size() - pos_ < n)
            throw InputError(where_, at + ": its " + std::to_string(8 * n) +
                                         "-bit value runs past the end of the data");
        std::uint64_t v = 0;  // little-endian
        for (std::size_t i = 0; i < n; ++i)
            v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
        pos_ += n;
        return v;
    };
    switch (wire) {
        case 0:
            field.type = WireType::kVarint;
            field.value = read_varint("varint");
            break;
        case 1:
            field.type = WireType::kFixed64;
            field.value = fixed(8);
            break;
        case 2: {
            field.type = WireType::kBytes;
            const std::uint64_t length = read_varint("length");
            if (length > data_.size() - pos_)
                throw InputError(where_, at + ": length " + std::to_string(length) +
                                             " runs past the end of the data (" +
                                             std::to_string(data_.size() - pos_) + " bytes left)");
            field.bytes = data_.substr(pos_, static_cast<std::size_t>(length));
            pos_ += static_cast<std::size_t>(length);
            break;
        }
        case 5:
            field.type = WireType::kFixed32;
            field.value = fixed(4);
            break;
        default:
            throw InputError(where_, at + ": wire type " + std::to_string(wire) +
                                         (wire == 3 || wire == 4 ? " (group) is not supported"
                                                                 : " does not exist"));
    }
    return true;
}

void ProtoReader::expect(const ProtoField& field, WireType type, const char* name) const {
    if (field.type != type)
        throw InputError(where_, std::string(name) + " (field " + std::to_string(field.number) +
                                     " at byte " + std::to_string(field.offset) + ") is " +
                                     wire_name(field.type) + ", expected " + wire_name(type));
}

std::uint64_t ProtoReader::as_uint(const ProtoField& field, const char* name) const {
    expect(field, WireType::kVarint, name);
    return field.value;
}

bool ProtoReader::as_bool(const ProtoField& field, const char* name) const {
    return as_uint(field, name) != 0;
}

std::int32_t ProtoReader::as_int32(const ProtoField& field, const char* name) const {
    // Negative int32 values are written as 10-byte varints of their 64-bit sign extension.
    const auto v = static_cast<std::int64_t>(as_uint(field, name));
    if (v < std::numeric_limits<std::int32_t>::min() ||
        v > std::numeric_limits<std::int32_t>::max())
        throw InputError(where_, std::string(name) + " at byte " + std::to_string(field.offset) +
                                     ": " + std::to_string(v) + " does not fit in 32 bits");
    return static_cast<std::int32_t>(v);
}

float ProtoReader::as_float(const ProtoField& field, const char* name) const {
    expect(field, WireType::kFixed32, name);
    return std::bit_cast<float>(static_cast<std::uint32_t>(field.value));
}

std::string_view ProtoReader::as_bytes(const ProtoField& field, const char* name) const {
    expect(field, WireType::kBytes, name);
    return field.bytes;
}

ProtoReader ProtoReader::message(const ProtoField& field, const char* name) const {
    const std::string_view payload = as_bytes(field, name);
    return ProtoReader(payload, where_,
                       base_ + static_cast<std::uint64_t>(payload.data() - data_.data()));
}

}  // namespace crucible::llm
