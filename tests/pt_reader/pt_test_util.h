#pragma once
// Byte builders for the .pt reader tests: a stored-entry ZIP writer and a pickle opcode writer.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/pt/zip_reader.h"

namespace crucible::engine::test {

inline void put16(std::string& s, std::uint32_t v) {
    s.push_back(static_cast<char>(v & 0xFF));
    s.push_back(static_cast<char>((v >> 8) & 0xFF));
}
inline void put32(std::string& s, std::uint32_t v) {
    put16(s, v & 0xFFFF);
    put16(s, v >> 16);
}

// A minimal ZIP (stored entries, no ZIP64) in the layout PyTorch uses.
inline std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries,
                            std::uint16_t method = 0) {
    std::string out, cd;
    for (const auto& [name, data] : entries) {
        const auto offset = static_cast<std::uint32_t>(out.size());
        const std::uint32_t crc = zip_crc32(data);
        put32(out, 0x04034b50);
        put16(out, 20);
        put16(out, 0);
        put16(out, method);
        put32(out, 0);
        put32(out, crc);
        put32(out, static_cast<std::uint32_t>(data.size()));
        put32(out, static_cast<std::uint32_t>(data.size()));
        put16(out, static_cast<std::uint32_t>(name.size()));
        put16(out, 0);
        out += name;
        out += data;
        put32(cd, 0x02014b50);
        put16(cd, 20);
        put16(cd, 20);
        put16(cd, 0);
        put16(cd, method);
        put32(cd, 0);
        put32(cd, crc);
        put32(cd, static_cast<std::uint32_t>(data.size()));
        put32(cd, static_cast<std::uint32_t>(data.size()));
        put16(cd, static_cast<std::uint32_t>(name.size()));
        put16(cd, 0);
        put16(cd, 0);
        put16(cd, 0);
        put16(cd, 0);
        put32(cd, 0);
        put32(cd, offset);
        cd += name;
    }
    const auto cd_offset = static_cast<std::uint32_t>(out.size());
    out += cd;
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, static_cast<std::uint32_t>(entries.size()));
    put16(out, static_cast<std::uint32_t>(entries.size()));
    put32(out, static_cast<std::uint32_t>(cd.size()));
    put32(out, cd_offset);
    put16(out, 0);
    return out;
}

// Pickle opcode writer (protocol 2 style, as torch.save writes).
struct Pickle {
    std::string b = std::string("\x80\x02", 2);

    Pickle& op(char c) {
        b.push_back(c);
        return *this;
    }
    Pickle& raw(const std::string& s) {
        b += s;
        return *this;
    }
    Pickle& str(const std::string& s) {
        b.push_back('X');
        put32(b, static_cast<std::uint32_t>(s.size()));
        b += s;
        return *this;
    }
    Pickle& integer(std::int32_t v) {
        b.push_back('J');
        put32(b, static_cast<std::uint32_t>(v));
        return *this;
    }
    Pickle& global(const std::string& module, const std::string& name) {
        b.push_back('c');
        b += module + "\n" + name + "\n";
        return *this;
    }
    Pickle& none() { return op('N'); }
    Pickle& mark() { return op('('); }
    Pickle& ints(const std::vector<std::int32_t>& v) {
        mark();
        for (auto i : v)
            integer(i);
        return op('t');
    }
    Pickle& ordered_dict_begin() {
        global("collections", "OrderedDict").op(')').op('R');
        return mark();
    }
    Pickle& setitems() { return op('u'); }
    // _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False,
    // OrderedDict())
    Pickle& tensor(const std::string& storage_type, const std::string& key, std::int32_t numel,
                   std::int32_t offset, const std::vector<std::int32_t>& size,
                   const std::vector<std::int32_t>& stride) {
        global("torch._utils", "_rebuild_tensor_v2").mark();
        mark()
            .str("storage")
            .global("torch", storage_type)
            .str(key)
            .str("cpu")
            .integer(numel)
            .op('t')
            .op('Q');
        integer(offset).ints(size).ints(stride).op('\x89');
        global("collections", "OrderedDict").op(')').op('R');
        return op('t').op('R');
    }
    Pickle& parameter_begin() { return global("torch._utils", "_rebuild_parameter").mark(); }
    Pickle& parameter_end() {
        op('\x88');
        global("collections", "OrderedDict").op(')').op('R');
        return op('t').op('R');
    }
    // Begins an nn.Module object: NEWOBJ then the state dict is opened; the caller writes
    // '_parameters', '_buffers', '_modules' entries and calls module_end().
    Pickle& module_begin(const std::string& module, const std::string& cls) {
        global(module, cls).op(')').op('\x81');
        op('}').mark().str("training").op('\x89');
        return *this;
    }
    Pickle& module_end() { return setitems().op('b'); }
    Pickle& stop() { return op('.'); }
};

}  // namespace crucible::engine::test
