#pragma once
// Protocol Buffers wire format read from untrusted bytes (tokenizer.model files): varints,
// 64-bit, length-delimited and 32-bit fields, one at a time. Every read is bounds-checked and
// every problem is an InputError that names `where`, the byte offset and the field; nothing is
// allocated from a length the reader has not checked against the bytes it has.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace crucible::llm {

enum class WireType : std::uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

struct ProtoField {
    std::uint32_t number = 0;
    WireType type = WireType::kVarint;
    std::uint64_t value = 0;   // varint, fixed64 or fixed32 value
    std::string_view bytes;    // kBytes: the payload (a view into the reader's data)
    std::uint64_t offset = 0;  // of the field's tag in the file
};

class ProtoReader {
  public:
    // `base_offset`: where `data` starts in the file, so that nested messages report file
    // offsets.
    ProtoReader(std::string_view data, std::string where, std::uint64_t base_offset = 0)
        : data_(data), where_(std::move(where)), base_(base_offset) {}

    // The next field, or false at the end of the data.
    bool next(ProtoField& field);

    // A field's value as one type. `name` ("trainer_spec.unk_id") names the field in errors;
    // a field of another wire type is an error.
    std::uint64_t as_uint(const ProtoField& field, const char* name) const;
    bool as_bool(const ProtoField& field, const char* name) const;
    std::int32_t as_int32(const ProtoField& field, const char* name) const;
    float as_float(const ProtoField& field, const char* name) const;
    std::string_view as_bytes(const ProtoField& field, const char* name) const;
    // A reader of a length-delimited field's payload (an embedded message).
    ProtoReader message(const ProtoField& field, const char* name) const;

    const std::string& where() const { return where_; }

  private:
    std::uint64_t read_varint(const char* what);
    void expect(const ProtoField& field, WireType type, const char* name) const;

    std::string_view data_;
    std::string where_;
    std::uint64_t base_ = 0;
    std::size_t pos_ = 0;
};

}  // namespace crucible::llm
