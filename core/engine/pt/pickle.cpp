#include "core/engine/pt/pickle.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/base/error.h"
#include "core/base/utf8.h"

namespace crucible::engine::pickle {

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::None:
            return "None";
        case Kind::Bool:
            return "Bool";
        case Kind::Int:
            return "Int";
        case Kind::BigInt:
            return "BigInt";
        case Kind::Float:
            return "Float";
        case Kind::String:
            return "String";
        case Kind::Bytes:
            return "Bytes";
        case Kind::Tuple:
            return "Tuple";
        case Kind::List:
            return "List";
        case Kind::Dict:
            return "Dict";
        case Kind::Set:
            return "Set";
        case Kind::Global:
            return "Global";
        case Kind::Object:
            return "Object";
        case Kind::Storage:
            return "Storage";
        case Kind::Tensor:
            return "Tensor";
    }
    return "?";
}

namespace {
struct StorageTypeInfo {
    StorageType type;
    const char* name;
    std::size_t size;
};
constexpr StorageTypeInfo kStorageTypes[] = {
    {StorageType::Half, "HalfStorage", 2},     {StorageType::Float, "FloatStorage", 4},
    {StorageType::Double, "DoubleStorage", 8}, {StorageType::BFloat16, "BFloat16Storage", 2},
    {StorageType::Long, "LongStorage", 8},     {StorageType::Int, "IntStorage", 4},
    {StorageType::Short, "ShortStorage", 2},   {StorageType::Char, "CharStorage", 1},
    {StorageType::Byte, "ByteStorage", 1},     {StorageType::Bool, "BoolStorage", 1},
};
}  // namespace

const char* storage_type_name(StorageType type) {
    for (const auto& info : kStorageTypes)
        if (info.type == type) return info.name;
    return "?";
}
std::size_t storage_element_size(StorageType type) {
    for (const auto& info : kStorageTypes)
        if (info.type == type) return info.size;
    return 1;
}
std::optional<StorageType> storage_type_from_name(std::string_view name) {
    for (const auto& info : kStorageTypes)
        if (name == info.name) return info.type;
    return std::nullopt;
}

std::string Value::class_name() const {
    if (kind == Kind::Global) return module + "." + name;
    if (kind == Kind::Object && object && object->callable) return object->callable->class_name();
    return {};
}

const Value* Value::get(std::string_view key) const {
    if (kind == Kind::Dict && dict) {
        auto it = dict->index.find("s" + std::string(key));
        return it == dict->index.end() ? nullptr : dict->items[it->second].second;
    }
    if (kind == Kind::Object && object) {
        for (auto it = object->dict_items.rbegin(); it != object->dict_items.rend(); ++it)
            if (it->first->kind == Kind::String && it->first->text == key) return it->second;
    }
    return nullptr;
}

const Value* Value::attributes() const {
    if (kind != Kind::Object || !object || !object->state) return nullptr;
    const Value* state = object->state;
    if (state->kind == Kind::Dict) return state;
    if (state->kind == Kind::Tuple && state->elements.size() == 2 &&
        state->elements[0]->kind == Kind::Dict)
        return state->elements[0];
    return nullptr;
}

const Value* Value::attr(std::string_view key) const {
    if (kind == Kind::Dict) return get(key);
    const Value* attrs = attributes();
    return attrs ? attrs->get(key) : nullptr;
}

std::string describe(const Value* v) {
    if (!v) return "nothing";
    switch (v->kind) {
        case Kind::Global:
            return "Global " + v->class_name();
        case Kind::Object:
            return "Object " + (v->class_name().empty() ? std::string("(non-global callable)")
                                                        : v->class_name());
        case Kind::String: {
            std::string t = v->text.size() > 40 ? v->text.substr(0, 40) + "..." : v->text;
            return "String '" + t + "'";
        }
        case Kind::Int:
            return "Int " + std::to_string(v->integer);
        case Kind::Storage:
            return std::string("Storage ") + storage_type_name(v->storage->type) + " '" +
                   v->storage->key + "'";
        default:
            return kind_name(v->kind);
    }
}

namespace {

const char* opcode_name(unsigned char op) {
    switch (op) {
        case '(':
            return "MARK";
        case '.':
            return "STOP";
        case '0':
            return "POP";
        case '1':
            return "POP_MARK";
        case '2':
            return "DUP";
        case 'F':
            return "FLOAT";
        case 'I':
            return "INT";
        case 'J':
            return "BININT";
        case 'K':
            return "BININT1";
        case 'L':
            return "LONG";
        case 'M':
            return "BININT2";
        case 'N':
            return "NONE";
        case 'P':
            return "PERSID";
        case 'Q':
            return "BINPERSID";
        case 'R':
            return "REDUCE";
        case 'S':
            return "STRING";
        case 'T':
            return "BINSTRING";
        case 'U':
            return "SHORT_BINSTRING";
        case 'V':
            return "UNICODE";
        case 'X':
            return "BINUNICODE";
        case 'a':
            return "APPEND";
        case 'b':
            return "BUILD";
        case 'c':
            return "GLOBAL";
        case 'd':
            return "DICT";
        case '}':
            return "EMPTY_DICT";
        case 'e':
            return "APPENDS";
        case 'g':
            return "GET";
        case 'h':
            return "BINGET";
        case 'i':
            return "INST";
        case 'j':
            return "LONG_BINGET";
        case 'l':
            return "LIST";
        case ']':
            return "EMPTY_LIST";
        case 'o':
            return "OBJ";
        case 'p':
            return "PUT";
        case 'q':
            return "BINPUT";
        case 'r':
            return "LONG_BINPUT";
        case 's':
            return "SETITEM";
        case 't':
            return "TUPLE";
        case ')':
            return "EMPTY_TUPLE";
        case 'u':
            return "SETITEMS";
        case 'G':
            return "BINFLOAT";
        case 'B':
            return "BINBYTES";
        case 'C':
            return "SHORT_BINBYTES";
        case 0x80:
            return "PROTO";
        case 0x81:
            return "NEWOBJ";
        case 0x82:
            return "EXT1";
        case 0x83:
            return "EXT2";
        case 0x84:
            return "EXT4";
        case 0x85:
            return "TUPLE1";
        case 0x86:
            return "TUPLE2";
        case 0x87:
            return "TUPLE3";
        case 0x88:
            return "NEWTRUE";
        case 0x89:
            return "NEWFALSE";
        case 0x8a:
            return "LONG1";
        case 0x8b:
            return "LONG4";
        case 0x8c:
            return "SHORT_BINUNICODE";
        case 0x8d:
            return "BINUNICODE8";
        case 0x8e:
            return "BINBYTES8";
        case 0x8f:
            return "EMPTY_SET";
        case 0x90:
            return "ADDITEMS";
        case 0x91:
            return "FROZENSET";
        case 0x92:
            return "NEWOBJ_EX";
        case 0x93:
            return "STACK_GLOBAL";
        case 0x94:
            return "MEMOIZE";
        case 0x95:
            return "FRAME";
        case 0x96:
            return "BYTEARRAY8";
        case 0x97:
            return "NEXT_BUFFER";
        case 0x98:
            return "READONLY_BUFFER";
        default:
            return nullptr;
    }
}

std::string hex_byte(unsigned char c) {
    const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[c >> 4] + digits[c & 15];
}

// Key text for the dict index: Python considers 1 == 1.0 == True, so numbers share a form.
std::optional<std::string> hash_key(const Value* k) {
    switch (k->kind) {
        case Kind::String:
            return "s" + k->text;
        case Kind::Bytes:
            return "b" + k->text;
        case Kind::Int:
            return "i" + std::to_string(k->integer);
        case Kind::Bool:
            return std::string(k->boolean ? "i1" : "i0");
        case Kind::None:
            return std::string("n");
        case Kind::Float: {
            const double r = k->real;
            if (std::isfinite(r) && r == std::floor(r) && std::fabs(r) < 9.0e18)
                return "i" + std::to_string(static_cast<std::int64_t>(r));
            char buf[40];
            std::snprintf(buf, sizeof buf, "f%.17g", r);
            return std::string(buf);
        }
        case Kind::Global:
            return "g" + k->module + "\n" + k->name;
        default:
            return std::nullopt;  // unhashable or compared by identity: no dedup
    }
}

}  // namespace

class Unpickler {
  public:
    Unpickler(std::string_view bytes, const std::string& where, const StorageResolver& resolver,
              const UnpickleLimits& limits)
        : in_(bytes), where_(where), resolver_(resolver), limits_(limits) {}

    PickleDocument run() {
        while (true) {
            if (pos_ >= in_.size()) {
                op_pos_ = pos_;
                op_ = 0;
                fail_plain(in_.empty() ? "empty pickle" : "pickle ends without STOP (truncated?)");
            }
            op_pos_ = pos_;
            op_ = static_cast<unsigned char>(in_[pos_++]);
            if (op_ == '.') break;
            step();
        }
        if (!marks_.empty()) fail("STOP with an open MARK");
        if (stack_.size() != 1)
            fail("STOP with " + std::to_string(stack_.size()) +
                 " values on the stack (expected exactly 1)");
        doc_.root_ = stack_.back();
        return std::move(doc_);
    }

  private:
    [[noreturn]] void fail_plain(const std::string& what) const {
        throw InputError(where_, "pickle offset " + std::to_string(op_pos_) + ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const {
        const char* name = opcode_name(op_);
        throw InputError(where_,
                         "pickle offset " + std::to_string(op_pos_) + ", opcode " + hex_byte(op_) +
                             (name ? std::string(" ") + name : std::string()) + ": " + what);
    }

    // ---- input ----
    std::string_view take(std::uint64_t n) {
        if (n > in_.size() - pos_)
            fail("needs " + std::to_string(n) + " bytes but only " +
                 std::to_string(in_.size() - pos_) + " remain (truncated or corrupt length)");
        std::string_view s = in_.substr(pos_, static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return s;
    }
    std::uint64_t read_le(int n) {
        std::string_view s = take(static_cast<std::uint64_t>(n));
        std::uint64_t v = 0;
        for (int i = n - 1; i >= 0; --i)
            v = (v << 8) | static_cast<unsigned char>(s[static_cast<std::size_t>(i)]);
        return v;
    }
    std::string_view read_line() {
        const std::size_t nl = in_.find('\n', pos_);
        if (nl == std::string_view::npos) fail("text argument without a terminating newline");
        std::string_view s = in_.substr(pos_, nl - pos_);
        pos_ = nl + 1;
        if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
        return s;
    }

    // ---- values ----
    Value* make(Kind kind) {
        if (doc_.values_.size() >= limits_.max_values)
            fail("more than " + std::to_string(limits_.max_values) + " values (limit)");
        Value& v = doc_.values_.emplace_back();
        v.kind = kind;
        if (kind == Kind::Dict) v.dict = &doc_.dicts_.emplace_back();
        if (kind == Kind::Object) v.object = &doc_.objects_.emplace_back();
        return &v;
    }
    void count_entries(std::uint64_t n) {
        entries_ += n;
        if (entries_ > limits_.max_entries)
            fail("more than " + std::to_string(limits_.max_entries) + " container entries (limit)");
    }
    void deepen(Value* parent, const Value* child) {
        if (child->depth + 1 > parent->depth) parent->depth = child->depth + 1;
        if (parent->depth > limits_.max_depth)
            fail("nesting deeper than " + std::to_string(limits_.max_depth) +
                 " levels (recursion bomb?)");
    }
    Value* make_int(std::int64_t i) {
        Value* v = make(Kind::Int);
        v->integer = i;
        return v;
    }
    Value* make_text(Kind kind, std::string_view text) {
        Value* v = make(kind);
        v->text.assign(text);
        return v;
    }
    Value* make_sequence(Kind kind, const std::vector<Value*>& items) {
        Value* v = make(kind);
        count_entries(items.size());
        v->elements.assign(items.begin(), items.end());
        for (const Value* item : items)
            deepen(v, item);
        return v;
    }
    void dict_set(Value* d, const Value* key, Value* value) {
        count_entries(1);
        deepen(d, key);
        deepen(d, value);
        if (auto h = hash_key(key)) {
            auto [it, inserted] = d->dict->index.emplace(*h, d->dict->items.size());
            if (!inserted) {
                d->dict->items[it->second].second = value;
                return;
            }
        }
        d->dict->items.emplace_back(key, value);
    }

    // ---- stack ----
    std::size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
    void push(Value* v) { stack_.push_back(v); }
    Value* pop() {
        if (stack_.size() <= base())
            fail(marks_.empty() ? "stack underflow" : "stack underflow (below the MARK)");
        Value* v = stack_.back();
        stack_.pop_back();
        return v;
    }
    Value* top() {
        if (stack_.size() <= base())
            fail(marks_.empty() ? "stack underflow" : "stack underflow (below the MARK)");
        return stack_.back();
    }
    std::vector<Value*> pop_mark() {
        if (marks_.empty()) fail("no MARK on the stack");
        const std::size_t m = marks_.back();
        marks_.pop_back();
        std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
        stack_.resize(m);
        return items;
    }

    // ---- memo ----
    void memo_put(std::uint64_t index, Value* v) {
        if (memo_.size() >= limits_.max_memo && !memo_.count(index))
            fail("more than " + std::to_string(limits_.max_memo) + " memo entries (limit)");
        memo_[index] = v;
    }
    Value* memo_get(std::uint64_t index) {
        auto it = memo_.find(index);
        if (it == memo_.end()) fail("memo index " + std::to_string(index) + " is not defined");
        return it->second;
    }

    // ---- globals and calls ----
    Value* make_global(std::string_view module, std::string_view name) {
        if (module.empty() || name.empty()) fail("empty module or class name");
        Value* g = make(Kind::Global);
        g->module.assign(module == "__builtin__" ? std::string_view("builtins") : module);
        g->name.assign(name);
        return g;
    }
    static bool is_global(const Value* v, std::string_view module, std::string_view name) {
        return v->kind == Kind::Global && v->module == module && v->name == name;
    }
    const Value* arg(const Value* args, std::size_t i, const char* what) {
        if (i >= args->elements.size()) fail(std::string("missing argument ") + what);
        return args->elements[i];
    }
    std::int64_t int_arg(const Value* args, std::size_t i, const char* what) {
        const Value* v = arg(args, i, what);
        if (v->kind == Kind::Int) return v->integer;
        if (v->kind == Kind::Bool) return v->boolean ? 1 : 0;
        fail(std::string(what) + " must be an Int, met " + describe(v));
    }
    std::vector<std::int64_t> int_tuple(const Value* v, const char* what) {
        // torch.Size(...) pickles as a plain tuple; accept either.
        if (v->kind == Kind::Object && is_global(v->object->callable, "torch", "Size") &&
            v->object->args && v->object->args->kind == Kind::Tuple &&
            v->object->args->elements.size() == 1)
            v = v->object->args->elements[0];
        if (v->kind != Kind::Tuple && v->kind != Kind::List)
            fail(std::string(what) + " must be a tuple, met " + describe(v));
        if (v->elements.size() > 64)
            fail(std::string(what) + " has " + std::to_string(v->elements.size()) +
                 " dimensions (limit 64)");
        std::vector<std::int64_t> out;
        for (const Value* e : v->elements) {
            if (e->kind != Kind::Int)
                fail(std::string(what) + " holds " + describe(e) + ", not an Int");
            out.push_back(e->integer);
        }
        return out;
    }

    Value* rebuild_tensor(const Value* args, const std::string& fn) {
        const Value* storage = arg(args, 0, "storage");
        if (storage->kind != Kind::Storage)
            fail(fn + ": first argument is " + describe(storage) + ", not a storage");
        const std::int64_t offset = int_arg(args, 1, "storage_offset");
        std::vector<std::int64_t> sizes = int_tuple(arg(args, 2, "size"), "size");
        std::vector<std::int64_t> strides = int_tuple(arg(args, 3, "stride"), "stride");
        bool requires_grad = false;
        if (args->elements.size() > 4) {
            const Value* rg = args->elements[4];
            if (rg->kind == Kind::Bool) requires_grad = rg->boolean;
        }
        if (sizes.size() != strides.size())
            fail(fn + ": size has " + std::to_string(sizes.size()) + " dimensions but stride has " +
                 std::to_string(strides.size()));
        const std::uint64_t numel = storage->storage->numel;
        auto view_text = [&] {
            std::string s = "offset " + std::to_string(offset) + ", size [";
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                if (i) s += ',';
                s += std::to_string(sizes[i]);
            }
            s += "], stride [";
            for (std::size_t i = 0; i < strides.size(); ++i) {
                if (i) s += ',';
                s += std::to_string(strides[i]);
            }
            return s + "]";
        };
        if (offset < 0) fail(fn + ": negative storage offset (" + view_text() + ")");
        bool empty = false;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            if (sizes[i] < 0 || strides[i] < 0)
                fail(fn + ": negative size or stride (" + view_text() + ")");
            if (sizes[i] == 0) empty = true;
        }
        if (!empty) {
            auto past_end = [&] {
                fail(fn + ": tensor view (" + view_text() + ") reaches past the end of its " +
                     std::to_string(numel) + "-element " +
                     storage_type_name(storage->storage->type) + " '" + storage->storage->key +
                     "'");
            };
            std::uint64_t last = static_cast<std::uint64_t>(offset);
            if (last >= numel) past_end();
            std::uint64_t count = 1;
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                const auto size = static_cast<std::uint64_t>(sizes[i]);
                const auto stride = static_cast<std::uint64_t>(strides[i]);
                if (size > numel / count)
                    fail(fn + ": view of more elements than its " + std::to_string(numel) +
                         "-element storage holds (" + view_text() +
                         "; overlapping views are not accepted)");
                count *= size;
                if (stride != 0 && size > 1) {
                    if (size - 1 > (numel - 1 - last) / stride) past_end();
                    last += (size - 1) * stride;
                }
            }
        } else if (static_cast<std::uint64_t>(offset) > numel) {
            fail(fn + ": storage offset past the end of its storage (" + view_text() + ")");
        }
        Value* t = make(Kind::Tensor);
        TensorData& td = doc_.tensors_.emplace_back();
        td.storage = storage;
        td.offset = static_cast<std::uint64_t>(offset);
        td.sizes = std::move(sizes);
        td.strides = std::move(strides);
        td.requires_grad = requires_grad;
        t->tensor = &td;
        deepen(t, storage);
        return t;
    }

    Value* rebuild_parameter(const Value* args, const std::string& fn) {
        const Value* data = arg(args, 0, "data");
        if (data->kind != Kind::Tensor)
            fail(fn + ": first argument is " + describe(data) + ", not a tensor");
        Value* t = make(Kind::Tensor);
        TensorData& td = doc_.tensors_.emplace_back(*data->tensor);
        td.parameter = true;
        if (args->elements.size() > 1 && args->elements[1]->kind == Kind::Bool)
            td.requires_grad = args->elements[1]->boolean;
        t->tensor = &td;
        deepen(t, data);
        return t;
    }

    Value* call(Value* callable, Value* args, Value* kwargs, bool reduce) {
        if (args->kind != Kind::Tuple) fail("arguments must be a tuple, met " + describe(args));
        if (callable->kind == Kind::Global && reduce) {
            const std::string fn = callable->class_name();
            if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor")
                return rebuild_tensor(args, fn);
            if (fn == "torch._utils._rebuild_parameter" ||
                fn == "torch._utils._rebuild_parameter_with_state")
                return rebuild_parameter(args, fn);
        }
        if (callable->kind == Kind::Global && (is_global(callable, "collections", "OrderedDict") ||
                                               is_global(callable, "builtins", "dict"))) {
            Value* d = make(Kind::Dict);
            if (!args->elements.empty()) {
                const Value* src = args->elements[0];
                if (src->kind == Kind::Dict) {
                    for (const auto& [k, v] : src->dict->items)
                        dict_set(d, k, v);
                } else if (src->kind == Kind::List || src->kind == Kind::Tuple) {
                    for (const Value* pair : src->elements) {
                        if (pair->kind != Kind::Tuple || pair->elements.size() != 2)
                            fail(callable->class_name() + " from " + describe(pair) +
                                 ", not a (key, value) pair");
                        dict_set(d, pair->elements[0], const_cast<Value*>(pair->elements[1]));
                    }
                } else {
                    fail(callable->class_name() + " from " + describe(src));
                }
            }
            return d;
        }
        if (callable->kind == Kind::Global && (is_global(callable, "builtins", "set") ||
                                               is_global(callable, "builtins", "frozenset"))) {
            Value* s = make(Kind::Set);
            if (!args->elements.empty()) {
                const Value* src = args->elements[0];
                if (src->kind != Kind::List && src->kind != Kind::Tuple && src->kind != Kind::Set)
                    fail(callable->class_name() + " from " + describe(src));
                count_entries(src->elements.size());
                s->elements = src->elements;
                deepen(s, src);
            }
            return s;
        }
        // Anything else: an inert record of the call.
        Value* o = make(Kind::Object);
        o->object->callable = callable;
        o->object->args = args;
        o->object->kwargs = kwargs;
        deepen(o, args);
        if (kwargs) deepen(o, kwargs);
        return o;
    }

    Value* persistent_load(const Value* pid) {
        if (pid->kind != Kind::Tuple || pid->elements.size() != 5 ||
            pid->elements[0]->kind != Kind::String || pid->elements[0]->text != "storage")
            fail("persistent id " + describe(pid) +
                 " is not a torch storage reference ('storage', type, key, location, numel)");
        if (!resolver_) fail("persistent id outside a PyTorch archive");
        const Value* type = pid->elements[1];
        const Value* key = pid->elements[2];
        const Value* location = pid->elements[3];
        const Value* numel = pid->elements[4];
        if (type->kind != Kind::Global || type->module != "torch")
            fail("storage type is " + describe(type) + ", not a torch.*Storage class");
        const auto st = storage_type_from_name(type->name);
        if (!st) fail("unsupported storage type torch." + type->name);
        if (key->kind != Kind::String || key->text.empty())
            fail("storage key is " + describe(key) + ", not a string");
        if (location->kind != Kind::String)
            fail("storage location is " + describe(location) + ", not a string");
        if (numel->kind != Kind::Int || numel->integer < 0)
            fail("storage element count is " + describe(numel));
        const auto n = static_cast<std::uint64_t>(numel->integer);
        if (auto it = doc_.storages_.find(key->text); it != doc_.storages_.end()) {
            const StorageData& s = *it->second->storage;
            if (s.type != *st || s.numel != n)
                fail("storage '" + key->text + "' referenced twice with different types or sizes");
            return const_cast<Value*>(it->second);
        }
        const std::optional<std::uint64_t> bytes = resolver_(key->text);
        if (!bytes) fail("storage '" + key->text + "' has no data entry in the archive");
        const std::size_t es = storage_element_size(*st);
        if (n > *bytes / es)
            fail("storage '" + key->text + "' claims " + std::to_string(n) + " " + type->name +
                 " elements (" +
                 (n > std::numeric_limits<std::uint64_t>::max() / es ? std::string("too many")
                                                                     : std::to_string(n * es)) +
                 " bytes) but its entry holds " + std::to_string(*bytes) + " bytes");
        Value* v = make(Kind::Storage);
        StorageData& sd = doc_.storage_data_.emplace_back();
        sd.type = *st;
        sd.key = key->text;
        sd.location = location->text;
        sd.numel = n;
        v->storage = &sd;
        doc_.storages_.emplace(sd.key, v);
        return v;
    }

    std::string_view check_utf8(std::string_view s) {
        // Python writes well-formed UTF-8, except for lone surrogates under "surrogatepass",
        // which no state dict key or JSON we write could carry: refused too.
        if (!is_valid_utf8(s)) fail("string is not valid UTF-8");
        return s;
    }

    Value* make_long(std::string_view bytes) {
        if (bytes.size() <= 8) {
            std::uint64_t u = 0;
            for (std::size_t i = bytes.size(); i-- > 0;)
                u = (u << 8) | static_cast<unsigned char>(bytes[i]);
            if (!bytes.empty() && bytes.size() < 8 &&
                (static_cast<unsigned char>(bytes.back()) & 0x80))
                u |= ~std::uint64_t{0} << (8 * bytes.size());  // sign-extend
            return make_int(static_cast<std::int64_t>(u));
        }
        return make_text(Kind::BigInt, bytes);
    }

    Value* parse_decimal_int(std::string_view s) {
        if (!s.empty() && s.back() == 'L') s.remove_suffix(1);
        if (s.empty()) fail("empty integer");
        bool neg = false;
        std::size_t i = 0;
        if (s[0] == '-' || s[0] == '+') {
            neg = s[0] == '-';
            i = 1;
        }
        if (i >= s.size()) fail("malformed integer");
        std::uint64_t u = 0;
        for (; i < s.size(); ++i) {
            if (s[i] < '0' || s[i] > '9')
                fail("malformed integer '" + std::string(s.substr(0, 32)) + "'");
            if (u > (std::numeric_limits<std::uint64_t>::max() - 9) / 10)
                fail("integer too large for 64 bits");
            u = u * 10 + static_cast<std::uint64_t>(s[i] - '0');
        }
        if (u >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (neg ? 1u : 0u))
            fail("integer too large for 64 bits");
        return make_int(neg ? static_cast<std::int64_t>(0 - u) : static_cast<std::int64_t>(u));
    }

    void step() {
        switch (op_) {
            case 0x80: {  // PROTO
                const auto proto = read_le(1);
                if (proto > 5) fail("unsupported pickle protocol " + std::to_string(proto));
                break;
            }
            case 0x95: {  // FRAME: a length hint only
                const auto n = read_le(8);
                if (n > in_.size() - pos_)
                    fail("frame of " + std::to_string(n) + " bytes runs past the end");
                break;
            }
            case '(':
                if (marks_.size() >= limits_.max_depth)
                    fail("more than " + std::to_string(limits_.max_depth) +
                         " nested MARKs (recursion bomb?)");
                marks_.push_back(stack_.size());
                break;
            case '0':
                if (stack_.size() > base())
                    stack_.pop_back();
                else
                    pop_mark();
                break;
            case '1':
                pop_mark();
                break;
            case '2':
                push(top());
                break;
            case 'N':
                push(make(Kind::None));
                break;
            case 0x88:
            case 0x89: {
                Value* v = make(Kind::Bool);
                v->boolean = op_ == 0x88;
                push(v);
                break;
            }
            case 'J':
                push(make_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(read_le(4)))));
                break;
            case 'K':
                push(make_int(static_cast<std::int64_t>(read_le(1))));
                break;
            case 'M':
                push(make_int(static_cast<std::int64_t>(read_le(2))));
                break;
            case 0x8a:
                push(make_long(take(read_le(1))));
                break;
            case 0x8b: {
                const auto n = read_le(4);
                if (n & 0x80000000u) fail("negative LONG4 length");
                push(make_long(take(n)));
                break;
            }
            case 'I': {
                std::string_view s = read_line();
                if (s == "01" || s == "00") {
                    Value* v = make(Kind::Bool);
                    v->boolean = s == "01";
                    push(v);
                } else {
                    push(parse_decimal_int(s));
                }
                break;
            }
            case 'L':
                push(parse_decimal_int(read_line()));
                break;
            case 'F': {
                const std::string s(read_line());
                char* end = nullptr;
                const double d = std::strtod(s.c_str(), &end);
                if (s.empty() || end != s.c_str() + s.size())
                    fail("malformed float '" + s.substr(0, 32) + "'");
                Value* v = make(Kind::Float);
                v->real = d;
                push(v);
                break;
            }
            case 'G': {
                std::string_view s = take(8);
                std::uint64_t u = 0;
                for (char c : s)
                    u = (u << 8) | static_cast<unsigned char>(c);  // big-endian
                double d;
                std::memcpy(&d, &u, sizeof d);
                Value* v = make(Kind::Float);
                v->real = d;
                push(v);
                break;
            }
            case 'X':
                push(make_text(Kind::String, check_utf8(take(read_le(4)))));
                break;
            case 0x8c:
                push(make_text(Kind::String, check_utf8(take(read_le(1)))));
                break;
            case 0x8d:
                push(make_text(Kind::String, check_utf8(take(read_le(8)))));
                break;
            case 'T': {
                const auto n = read_le(4);
                if (n & 0x80000000u) fail("negative BINSTRING length");
                push(make_text(Kind::String, take(n)));  // Python 2 str: bytes, kept as text
                break;
            }
            case 'U':
                push(make_text(Kind::String, take(read_le(1))));
                break;
            case 'B':
                push(make_text(Kind::Bytes, take(read_le(4))));
                break;
            case 'C':
                push(make_text(Kind::Bytes, take(read_le(1))));
                break;
            case 0x8e:
                push(make_text(Kind::Bytes, take(read_le(8))));
                break;
            case 0x96:
                push(make_text(Kind::Bytes, take(read_le(8))));
                break;  // bytearray: kept as bytes
            case ')':
                push(make_sequence(Kind::Tuple, {}));
                break;
            case 0x85:
            case 0x86:
            case 0x87: {
                const std::size_t n = static_cast<std::size_t>(op_ - 0x84);
                std::vector<Value*> items(n);
                for (std::size_t i = n; i-- > 0;)
                    items[i] = pop();
                push(make_sequence(Kind::Tuple, items));
                break;
            }
            case 't':
                push(make_sequence(Kind::Tuple, pop_mark()));
                break;
            case ']':
                push(make_sequence(Kind::List, {}));
                break;
            case 'l':
                push(make_sequence(Kind::List, pop_mark()));
                break;
            case '}':
                push(make(Kind::Dict));
                break;
            case 'd': {
                std::vector<Value*> items = pop_mark();
                if (items.size() % 2) fail("odd number of items for a dict");
                Value* d = make(Kind::Dict);
                for (std::size_t i = 0; i < items.size(); i += 2)
                    dict_set(d, items[i], items[i + 1]);
                push(d);
                break;
            }
            case 0x8f:
                push(make(Kind::Set));
                break;
            case 0x91:
                push(make_sequence(Kind::Set, pop_mark()));
                break;
            case 0x90: {  // ADDITEMS
                std::vector<Value*> items = pop_mark();
                Value* s = top();
                if (s->kind != Kind::Set) fail("ADDITEMS on " + describe(s));
                count_entries(items.size());
                for (Value* item : items) {
                    s->elements.push_back(item);
                    deepen(s, item);
                }
                break;
            }
            case 'a':
            case 'e': {
                std::vector<Value*> items;
                if (op_ == 'a')
                    items.push_back(pop());
                else
                    items = pop_mark();
                Value* list = top();
                count_entries(items.size());
                if (list->kind == Kind::List) {
                    for (Value* item : items) {
                        list->elements.push_back(item);
                        deepen(list, item);
                    }
                } else if (list->kind == Kind::Object) {
                    for (Value* item : items) {
                        list->object->list_items.push_back(item);
                        deepen(list, item);
                    }
                } else {
                    fail("append to " + describe(list));
                }
                break;
            }
            case 's':
            case 'u': {
                std::vector<Value*> items;
                if (op_ == 's') {
                    Value* v = pop();
                    Value* k = pop();
                    items = {k, v};
                } else {
                    items = pop_mark();
                    if (items.size() % 2) fail("odd number of items for SETITEMS");
                }
                Value* d = top();
                if (d->kind == Kind::Dict) {
                    for (std::size_t i = 0; i < items.size(); i += 2)
                        dict_set(d, items[i], items[i + 1]);
                } else if (d->kind == Kind::Object) {
                    count_entries(items.size() / 2);
                    for (std::size_t i = 0; i < items.size(); i += 2) {
                        d->object->dict_items.emplace_back(items[i], items[i + 1]);
                        deepen(d, items[i]);
                        deepen(d, items[i + 1]);
                    }
                } else {
                    fail("set item on " + describe(d));
                }
                break;
            }
            case 'q':
                memo_put(read_le(1), top());
                break;
            case 'r':
                memo_put(read_le(4), top());
                break;
            case 0x94:
                memo_put(memo_.size(), top());
                break;
            case 'p': {
                Value* idx = parse_decimal_int(read_line());
                if (idx->integer < 0) fail("negative memo index");
                memo_put(static_cast<std::uint64_t>(idx->integer), top());
                break;
            }
            case 'h':
                push(memo_get(read_le(1)));
                break;
            case 'j':
                push(memo_get(read_le(4)));
                break;
            case 'g': {
                Value* idx = parse_decimal_int(read_line());
                if (idx->integer < 0) fail("negative memo index");
                push(memo_get(static_cast<std::uint64_t>(idx->integer)));
                break;
            }
            case 'c': {
                const std::string_view module = read_line();
                const std::string_view name = read_line();
                push(make_global(module, name));
                break;
            }
            case 0x93: {
                Value* name = pop();
                Value* module = pop();
                if (module->kind != Kind::String || name->kind != Kind::String)
                    fail("module and name must be strings, met " + describe(module) + " and " +
                         describe(name));
                push(make_global(module->text, name->text));
                break;
            }
            case 'R': {
                Value* args = pop();
                Value* callable = pop();
                push(call(callable, args, nullptr, true));
                break;
            }
            case 0x81: {
                Value* args = pop();
                Value* cls = pop();
                push(call(cls, args, nullptr, false));
                break;
            }
            case 0x92: {
                Value* kwargs = pop();
                Value* args = pop();
                Value* cls = pop();
                if (kwargs->kind != Kind::Dict)
                    fail("keyword arguments must be a dict, met " + describe(kwargs));
                push(call(cls, args, kwargs, false));
                break;
            }
            case 'i': {  // INST: module, name lines; args from the mark
                const std::string_view module = read_line();
                const std::string_view name = read_line();
                Value* cls = make_global(module, name);
                Value* args = make_sequence(Kind::Tuple, pop_mark());
                push(call(cls, args, nullptr, false));
                break;
            }
            case 'o': {  // OBJ: class then args after the mark
                std::vector<Value*> items = pop_mark();
                if (items.empty()) fail("OBJ without a class");
                Value* cls = items.front();
                items.erase(items.begin());
                push(call(cls, make_sequence(Kind::Tuple, items), nullptr, false));
                break;
            }
            case 'b': {
                Value* state = pop();
                Value* inst = top();
                if (inst->kind != Kind::Object)
                    fail("BUILD on " + describe(inst) + " (only class instances take a state)");
                inst->object->state = state;
                deepen(inst, state);
                break;
            }
            case 'Q':
                push(persistent_load(pop()));
                break;
            case 'P':
                push(persistent_load(make_text(Kind::String, read_line())));
                break;
            case 'S':
                fail("protocol-0 quoted STRING is not supported (PyTorch writes protocol 2)");
            case 'V':
                fail("protocol-0 UNICODE is not supported (PyTorch writes protocol 2)");
            case 0x82:
            case 0x83:
            case 0x84:
                fail("extension-registry codes are not supported");
            case 0x97:
            case 0x98:
                fail("out-of-band buffers are not supported");
            default:
                fail("unknown opcode");
        }
    }

    std::string_view in_;
    const std::string& where_;
    const StorageResolver& resolver_;
    UnpickleLimits limits_;
    std::size_t pos_ = 0;
    std::size_t op_pos_ = 0;
    unsigned char op_ = 0;
    std::uint64_t entries_ = 0;
    std::vector<Value*> stack_;
    std::vector<std::size_t> marks_;
    std::unordered_map<std::uint64_t, Value*> memo_;
    PickleDocument doc_;
};

PickleDocument unpickle(std::string_view bytes, const std::string& where,
                        const StorageResolver& resolver, const UnpickleLimits& limits) {
    return Unpickler(bytes, where, resolver, limits).run();
}

}  // namespace crucible::engine::pickle
