#pragma once
// A restricted Python unpickler (protocols 0-5, binary opcodes plus the simple text ones) for
// PyTorch checkpoints. It never imports or runs anything: every class or function the pickle
// names is recorded as an inert Global, and calling it (REDUCE, NEWOBJ, NEWOBJ_EX, INST, OBJ)
// builds an Object record (callable + args + state). A small whitelist is understood:
// collections.OrderedDict (-> Dict), builtins set/frozenset (-> Set), torch.*Storage persistent
// ids (-> Storage), torch._utils._rebuild_tensor_v2 / _rebuild_parameter(_with_state) (-> Tensor
// descriptor, view checked against its storage). Tensors are only described here; LibTorch
// rebuilds them (pt_checkpoint.h). Free of LibTorch so the fuzz sub-build can compile it.
//
// All values live in one arena owned by the PickleDocument (the memo can alias values and a
// hostile pickle can even build cycles; the arena makes that harmless). Every violation of the
// format or of a limit throws crucible::InputError naming the input, the opcode and its offset.
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace crucible::engine::pickle {

enum class Kind {
    None,
    Bool,
    Int,
    BigInt,
    Float,
    String,
    Bytes,
    Tuple,
    List,
    Dict,
    Set,
    Global,   // a class or function reference: module + name (never imported)
    Object,   // the result of calling a Global (or anything) with args, plus BUILD state
    Storage,  // a torch storage named by a persistent id
    Tensor,   // a torch tensor view over a Storage
};
const char* kind_name(Kind kind);

enum class StorageType { Half, Float, Double, BFloat16, Long, Int, Short, Char, Byte, Bool };
const char* storage_type_name(StorageType type);  // "HalfStorage", ...
std::size_t storage_element_size(StorageType type);
std::optional<StorageType> storage_type_from_name(std::string_view torch_class_name);

struct Value;

struct DictData {
    std::vector<std::pair<const Value*, Value*>> items;  // insertion order, keys unique
    std::unordered_map<std::string, std::size_t>
        index;  // hashable keys (str/int/bool/float/None/bytes)
};

struct ObjectData {
    const Value* callable = nullptr;  // usually a Global
    const Value* args = nullptr;      // usually a Tuple (nullptr when none)
    const Value* kwargs = nullptr;    // NEWOBJ_EX only
    const Value* state = nullptr;     // from BUILD
    // Dict / list subclasses receive SETITEMS / APPENDS into these.
    std::vector<std::pair<const Value*, const Value*>> dict_items;
    std::vector<const Value*> list_items;
};

struct StorageData {
    StorageType type = StorageType::Float;
    std::string key;       // archive entry <prefix>/data/<key>
    std::string location;  // "cpu", "cuda:0", ...
    std::uint64_t numel = 0;
};

struct TensorData {
    const Value* storage = nullptr;  // Kind::Storage
    std::uint64_t offset = 0;        // in elements
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> strides;
    bool requires_grad = false;
    bool parameter = false;  // came through _rebuild_parameter
};

struct Value {
    Kind kind = Kind::None;
    bool boolean = false;
    std::int64_t integer = 0;
    double real = 0.0;
    std::string text;  // String (UTF-8), Bytes, BigInt (little-endian two's complement bytes)
    std::string module, name;            // Global
    std::vector<const Value*> elements;  // Tuple, List, Set
    DictData* dict = nullptr;            // Dict (owned by the document)
    ObjectData* object = nullptr;        // Object
    StorageData* storage = nullptr;      // Storage
    TensorData* tensor = nullptr;        // Tensor
    std::uint32_t depth = 1;             // nesting depth seen when built (a first barrier only)

    bool is(Kind k) const { return kind == k; }
    bool is_none() const { return kind == Kind::None; }
    // "module.name" for a Global, the callable's for an Object; "" otherwise.
    std::string class_name() const;
    // Dict (or dict-subclass Object) lookup by string key; nullptr when absent or not a dict.
    const Value* get(std::string_view key) const;
    // The attribute dict of an Object (its BUILD state, or the first item of a (dict, slots)
    // tuple); nullptr when it has none.
    const Value* attributes() const;
    // Attribute of an Object (via attributes()), or key of a Dict.
    const Value* attr(std::string_view key) const;
};

struct UnpickleLimits {
    std::uint32_t max_depth = 256;          // nesting of containers and of MARKs
    std::uint64_t max_values = 2'000'000;   // values created
    std::uint64_t max_entries = 8'000'000;  // container slots filled (elements + dict items)
    std::uint64_t max_memo = 2'000'000;     // memo entries
};

// Resolves a storage key to the size in bytes of its archive entry, nullopt when there is none.
using StorageResolver = std::function<std::optional<std::uint64_t>(const std::string& key)>;

class PickleDocument {
  public:
    PickleDocument() = default;
    PickleDocument(PickleDocument&&) noexcept = default;
    PickleDocument& operator=(PickleDocument&&) noexcept = default;
    PickleDocument(const PickleDocument&) = delete;
    PickleDocument& operator=(const PickleDocument&) = delete;

    const Value* root() const { return root_; }
    std::size_t value_count() const { return values_.size(); }
    // Every distinct storage met, by key.
    const std::unordered_map<std::string, const Value*>& storages() const { return storages_; }

  private:
    friend class Unpickler;
    std::deque<Value> values_;
    std::deque<DictData> dicts_;
    std::deque<ObjectData> objects_;
    std::deque<StorageData> storage_data_;
    std::deque<TensorData> tensors_;
    std::unordered_map<std::string, const Value*> storages_;
    const Value* root_ = nullptr;
};

// Parses one pickle. `where` names the input in errors ("best.pt:archive/data.pkl").
// Persistent ids are accepted only in the PyTorch form ('storage', torch.<T>Storage, key,
// location, numel) and only when `resolver` is given; the resolver's entry size must hold numel
// elements.
PickleDocument unpickle(std::string_view bytes, const std::string& where,
                        const StorageResolver& resolver = {}, const UnpickleLimits& limits = {});

// Text for messages: "Dict", "Object ultralytics.nn.tasks.DetectionModel", "String 'abc'".
std::string describe(const Value* value);

}  // namespace crucible::engine::pickle
