#include "core/engine/pt/pt_archive.h"

#include <algorithm>
#include <map>

#include "core/base/error.h"
#include "core/base/utf8.h"

namespace crucible::engine {

using pickle::Kind;
using pickle::Value;

std::string_view PtArchive::storage_bytes(const std::string& key) const {
    const std::string entry = prefix.empty() ? "data/" + key : prefix + "/data/" + key;
    return zip.read(entry);
}

PtArchive open_pt_archive(std::shared_ptr<const std::string> bytes, std::string where,
                          const pickle::UnpickleLimits& limits) {
    if (!bytes) throw Error("open_pt_archive: no bytes");
    const std::string_view b(*bytes);
    if (b.empty()) throw InputError(where, "empty file (not a PyTorch checkpoint)");
    if (b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x80 &&
        static_cast<unsigned char>(b[1]) <= 5)
        throw InputError(where,
                         "legacy (pre-1.6, non-zip) PyTorch serialization is not supported; "
                         "re-save the checkpoint with a current torch.save");
    if (!looks_like_zip(b))
        throw InputError(where, "not a ZIP archive, so not a PyTorch checkpoint");

    PtArchive a{ZipArchive::open(bytes, where), where, {}, {}};
    // data.pkl sits in one top-level folder (torch writes "<name>/data.pkl").
    const ZipEntry* pkl = nullptr;
    bool torchscript = false;
    for (const ZipEntry& e : a.zip.entries()) {
        const std::string& n = e.name;
        const std::size_t slash = n.find('/');
        const bool is_pkl =
            n == "data.pkl" || (slash != std::string::npos && slash + 9 == n.size() &&
                                n.compare(slash, 9, "/data.pkl") == 0);
        if (is_pkl) {
            if (pkl)
                throw InputError(
                    where, "archive holds two data.pkl entries ('" + pkl->name + "', '" + n + "')");
            pkl = &e;
        }
        if (n.size() >= 13 && n.compare(n.size() - 13, 13, "constants.pkl") == 0)
            torchscript = true;
    }
    if (!pkl) {
        if (torchscript)
            throw InputError(where,
                             "TorchScript archive (constants.pkl, no data.pkl): export weights "
                             "with torch.save instead");
        throw InputError(where, "ZIP archive without a data.pkl entry: not a PyTorch checkpoint");
    }
    a.prefix = pkl->name == "data.pkl" ? std::string() : pkl->name.substr(0, pkl->name.size() - 9);
    const std::string dir = a.prefix.empty() ? std::string() : a.prefix + "/";
    if (const ZipEntry* bo = a.zip.find(dir + "byteorder")) {
        const std::string_view order = a.zip.read(*bo);
        if (order != "little")
            throw InputError(where, "byte order '" + std::string(order.substr(0, 16)) +
                                        "' is not supported (little-endian only)");
    }
    if (const ZipEntry* ver = a.zip.find(dir + "version")) {
        std::string_view v = a.zip.read(*ver);
        while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' '))
            v.remove_suffix(1);
        if (v.empty() || v.size() > 4 ||
            !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
            throw InputError(where, "archive version entry '" + std::string(v.substr(0, 16)) +
                                        "' is not a number");
    }
    const std::string pkl_where = where + ":" + pkl->name;
    const std::string_view pkl_bytes = a.zip.read(*pkl);
    const ZipArchive& zip = a.zip;
    pickle::StorageResolver resolver =
        [&zip, dir](const std::string& key) -> std::optional<std::uint64_t> {
        const ZipEntry* e = zip.find(dir + "data/" + key);
        if (!e) return std::nullopt;
        return e->size;
    };
    a.doc = pickle::unpickle(pkl_bytes, pkl_where, resolver, limits);
    return a;
}

// ---------------------------------------------------------------- JSON image

namespace {

class JsonBuilder {
  public:
    JsonBuilder(const WalkLimits& limits, const std::string& where)
        : limits_(limits), where_(where) {}

    Json build(const Value* v, std::uint32_t depth) {
        if (depth > limits_.max_json_depth)
            throw InputError(where_, "value nested deeper than " +
                                         std::to_string(limits_.max_json_depth) + " levels");
        if (++nodes_ > limits_.max_json_nodes)
            throw InputError(
                where_, "value larger than " + std::to_string(limits_.max_json_nodes) + " nodes");
        switch (v->kind) {
            case Kind::None:
                return nullptr;
            case Kind::Bool:
                return v->boolean;
            case Kind::Int:
                return v->integer;
            case Kind::BigInt:
                return "<big integer of " + std::to_string(v->text.size()) + " bytes>";
            case Kind::Float:
                return v->real;
            case Kind::String:
                // nlohmann::json throws on dump of invalid UTF-8; BINSTRING may hold any bytes.
                return is_valid_utf8(v->text) ? Json(v->text) : Json("<non-UTF-8 text>");
            case Kind::Bytes:
                return "<" + std::to_string(v->text.size()) + " bytes>";
            case Kind::Tuple:
            case Kind::List:
            case Kind::Set: {
                Json a = Json::array();
                for (const Value* e : v->elements)
                    a.push_back(build(e, depth + 1));
                return a;
            }
            case Kind::Dict: {
                Json o = Json::object();
                for (const auto& [k, val] : v->dict->items)
                    o[key_text(k)] = build(val, depth + 1);
                return o;
            }
            case Kind::Global:
                return Json{{"__global__", v->class_name()}};
            case Kind::Storage:
                return Json{{"__storage__", pickle::storage_type_name(v->storage->type)}};
            case Kind::Tensor: {
                Json shape = Json::array();
                for (auto s : v->tensor->sizes)
                    shape.push_back(s);
                return Json{
                    {"__tensor__", pickle::storage_type_name(v->tensor->storage->storage->type)},
                    {"shape", shape}};
            }
            case Kind::Object: {
                Json o = Json::object();
                o["__class__"] = v->class_name();
                if (v->object->args && !v->object->args->elements.empty())
                    o["args"] = build(v->object->args, depth + 1);
                if (v->object->state) o["state"] = build(v->object->state, depth + 1);
                return o;
            }
        }
        return nullptr;
    }

    static std::string key_text(const Value* k) {
        switch (k->kind) {
            case Kind::String:
                return is_valid_utf8(k->text) ? k->text : "<non-UTF-8 text>";
            case Kind::Int:
                return std::to_string(k->integer);
            case Kind::Bool:
                return k->boolean ? "True" : "False";
            case Kind::None:
                return "None";
            default:
                return "<" + std::string(pickle::kind_name(k->kind)) + ">";
        }
    }

  private:
    const WalkLimits& limits_;
    const std::string& where_;
    std::uint64_t nodes_ = 0;
};

class ModuleWalker {
  public:
    ModuleWalker(const WalkLimits& limits, const std::string& where, std::vector<PtStateEntry>& out)
        : limits_(limits), where_(where), out_(out) {}

    void walk(const Value* module, const std::string& path, std::uint32_t depth) {
        const std::string shown = path.empty() ? "the model" : "module '" + path + "'";
        if (depth > limits_.max_module_depth)
            throw InputError(where_, "modules nested deeper than " +
                                         std::to_string(limits_.max_module_depth) + " levels at " +
                                         shown);
        const Value* attrs = module->kind == Kind::Object ? module->attributes() : nullptr;
        if (!attrs)
            throw InputError(where_,
                             shown + " is " + pickle::describe(module) + ", not a torch module");
        const Value* params = attrs->get("_parameters");
        const Value* buffers = attrs->get("_buffers");
        const Value* modules = attrs->get("_modules");
        if (!params || !buffers || !modules)
            throw InputError(where_,
                             shown + " (" + module->class_name() +
                                 ") has no _parameters/_buffers/_modules: not a torch module");
        const std::string prefix = path.empty() ? std::string() : path + ".";
        add_tensors(params, prefix, shown, "_parameters", nullptr);
        add_tensors(buffers, prefix, shown, "_buffers", attrs->get("_non_persistent_buffers_set"));
        if (modules->kind != Kind::Dict)
            throw InputError(where_, shown + ": _modules is " + pickle::describe(modules));
        for (const auto& [k, child] : modules->dict->items) {
            if (k->kind != Kind::String)
                throw InputError(where_, shown + ": _modules key is " + pickle::describe(k));
            if (child->is_none()) continue;
            walk(child, prefix + k->text, depth + 1);
        }
    }

    void add(const std::string& name, const Value* tensor) {
        if (out_.size() >= limits_.max_tensors)
            throw InputError(where_, "more than " + std::to_string(limits_.max_tensors) +
                                         " tensors in the state dict");
        out_.push_back({name, tensor});
    }

  private:
    void add_tensors(const Value* dict, const std::string& prefix, const std::string& shown,
                     const char* field, const Value* skip_set) {
        if (dict->kind != Kind::Dict)
            throw InputError(where_, shown + ": " + field + " is " + pickle::describe(dict));
        for (const auto& item : dict->dict->items) {
            const Value* k = item.first;
            const Value* v = item.second;
            if (k->kind != Kind::String)
                throw InputError(where_, shown + ": " + field + " key is " + pickle::describe(k));
            if (v->is_none()) continue;
            if (skip_set && skip_set->kind == Kind::Set &&
                std::any_of(
                    skip_set->elements.begin(), skip_set->elements.end(),
                    [&](const Value* e) { return e->kind == Kind::String && e->text == k->text; }))
                continue;
            if (v->kind != Kind::Tensor)
                throw InputError(where_, shown + ": " + field + " '" + k->text + "' is " +
                                             pickle::describe(v) + ", not a tensor");
            add(prefix + k->text, v);
        }
    }

    const WalkLimits& limits_;
    const std::string& where_;
    std::vector<PtStateEntry>& out_;
};

bool is_empty_model(const Value* v) {
    return !v || v->is_none() || (v->kind == Kind::Dict && v->dict->items.empty());
}

bool is_tensor_dict(const Value* v) {
    if (v->kind != Kind::Dict || v->dict->items.empty()) return false;
    return std::all_of(v->dict->items.begin(), v->dict->items.end(), [](const auto& kv) {
        return kv.first->kind == Kind::String && kv.second->kind == Kind::Tensor;
    });
}

std::string top_level_keys(const Value* root) {
    std::string keys;
    if (root->kind != Kind::Dict) return keys;
    for (const auto& [k, v] : root->dict->items) {
        if (keys.size() > 200) return keys + ", ...";
        if (!keys.empty()) keys += ", ";
        keys += JsonBuilder::key_text(k);
    }
    return keys;
}

}  // namespace

Json pickle_to_json(const Value* value, const WalkLimits& limits) {
    static const std::string where = "pickle value";
    if (!value) return nullptr;
    return JsonBuilder(limits, where).build(value, 0);
}

PtModelInfo describe_pt_model(const PtArchive& archive, const WalkLimits& limits) {
    const std::string& where = archive.where;
    const Value* root = archive.doc.root();
    if (!root) throw InputError(where, "empty pickle");
    PtModelInfo info;

    const Value* model = nullptr;
    if (root->kind == Kind::Dict) {
        const Value* m = root->get("model");
        const Value* ema = root->get("ema");
        if (!is_empty_model(m)) {
            model = m;
            info.source = "model";
        } else if (!is_empty_model(ema)) {
            model = ema;
            info.source = "ema";
        } else if (const Value* sd = root->get("state_dict"); sd && is_tensor_dict(sd)) {
            model = sd;
            info.source = "state_dict";
        } else if (is_tensor_dict(root)) {
            model = root;
            info.source = "root";
        } else if (m || ema) {
            throw InputError(where, "checkpoint's 'model' and 'ema' are both empty");
        } else {
            throw InputError(where, "checkpoint has no 'model' or 'ema' entry (top-level keys: " +
                                        top_level_keys(root) + ")");
        }
    } else {
        model = root;
        info.source = "root";
    }

    ModuleWalker walker(limits, where, info.state);
    if (model->kind == Kind::Dict) {
        if (!is_tensor_dict(model))
            throw InputError(where,
                             "'" + info.source + "' is a dict but not a state dict of tensors");
        for (const auto& [k, v] : model->dict->items)
            walker.add(k->text, v);
    } else {
        info.model_class = model->class_name();
        walker.walk(model, "", 0);
    }

    JsonBuilder json(limits, where);
    // Ultralytics metadata: the model's yaml dict, names and nc attributes.
    const Value* yaml = model->kind == Kind::Object ? model->attr("yaml") : nullptr;
    if (yaml && yaml->kind == Kind::Dict) info.yaml = json.build(yaml, 0);
    if (const Value* nc = model->kind == Kind::Object ? model->attr("nc") : nullptr;
        nc && nc->kind == Kind::Int)
        info.nc = nc->integer;
    else if (info.yaml.is_object() && info.yaml.contains("nc") &&
             info.yaml["nc"].is_number_integer())
        info.nc = info.yaml["nc"].get<std::int64_t>();
    if (info.nc && (*info.nc < 1 || *info.nc > 100000))
        throw InputError(where,
                         "class count nc = " + std::to_string(*info.nc) + " is out of range");

    const Value* names = model->kind == Kind::Object ? model->attr("names") : nullptr;
    if ((!names || names->is_none()) && yaml && yaml->kind == Kind::Dict)
        names = yaml->get("names");
    if (names && names->kind == Kind::Dict) {
        std::map<std::int64_t, std::string> by_index;
        for (const auto& [k, v] : names->dict->items) {
            if (k->kind != Kind::Int || v->kind != Kind::String)
                throw InputError(where, "class names: entry " + pickle::describe(k) + " -> " +
                                            pickle::describe(v) + " is not index -> name");
            by_index[k->integer] = JsonBuilder::key_text(v);
        }
        std::int64_t expect = 0;
        for (const auto& [i, n] : by_index) {
            if (i != expect)
                throw InputError(where,
                                 "class names: index " + std::to_string(expect) + " is missing");
            info.names.push_back(n);
            ++expect;
        }
    } else if (names && (names->kind == Kind::List || names->kind == Kind::Tuple)) {
        for (const Value* n : names->elements) {
            if (n->kind != Kind::String)
                throw InputError(where, "class names: " + pickle::describe(n) + " is not a string");
            info.names.push_back(JsonBuilder::key_text(n));
        }
    }
    if (info.nc && !info.names.empty() && static_cast<std::int64_t>(info.names.size()) != *info.nc)
        throw InputError(where, "model has nc = " + std::to_string(*info.nc) + " but " +
                                    std::to_string(info.names.size()) + " class names");
    if (!info.nc && !info.names.empty()) info.nc = static_cast<std::int64_t>(info.names.size());

    // Scale: the yaml's 'scale', else the letter in yaml_file ("yolov8n.yaml"), else the width of
    // the first conv (16/32/48/64/80 output channels for n/s/m/l/x).
    if (info.yaml.is_object() && info.yaml.contains("scale") && info.yaml["scale"].is_string()) {
        info.scale = info.yaml["scale"].get<std::string>();
        info.scale_source = "yaml";
    } else if (info.yaml.is_object() && info.yaml.contains("yaml_file") &&
               info.yaml["yaml_file"].is_string()) {
        const std::string f = info.yaml["yaml_file"].get<std::string>();
        const std::size_t at = f.rfind("yolov8");
        if (at != std::string::npos && at + 6 < f.size() &&
            std::string("nsmlx").find(f[at + 6]) != std::string::npos) {
            info.scale = std::string(1, f[at + 6]);
            info.scale_source = "yaml_file";
        }
    }
    if (info.scale.empty()) {
        for (const PtStateEntry& e : info.state) {
            if (e.name != "model.0.conv.weight" || e.tensor->tensor->sizes.empty()) continue;
            switch (e.tensor->tensor->sizes[0]) {
                case 16:
                    info.scale = "n";
                    break;
                case 32:
                    info.scale = "s";
                    break;
                case 48:
                    info.scale = "m";
                    break;
                case 64:
                    info.scale = "l";
                    break;
                case 80:
                    info.scale = "x";
                    break;
                default:
                    break;
            }
            if (!info.scale.empty()) info.scale_source = "weights";
        }
    }
    if (!info.scale.empty() &&
        (info.scale.size() != 1 || std::string("nsmlx").find(info.scale[0]) == std::string::npos))
        throw InputError(
            where, "model scale '" + info.scale.substr(0, 16) + "' is not one of n, s, m, l, x");

    if (root->kind == Kind::Dict) {
        if (const Value* ta = root->get("train_args"); ta && !ta->is_none())
            info.train_args = json.build(ta, 0);
        if (const Value* e = root->get("epoch"); e && e->kind == Kind::Int) info.epoch = e->integer;
        if (const Value* d = root->get("date"); d && d->kind == Kind::String)
            info.date = JsonBuilder::key_text(d);
        if (const Value* v = root->get("version"); v && v->kind == Kind::String)
            info.ultralytics_version = JsonBuilder::key_text(v);
    }
    if (info.train_args.is_null() && model->kind == Kind::Object) {
        const Value* args = model->attr("args");
        if (args && args->kind == Kind::Object && args->attributes())
            info.train_args = json.build(args->attributes(), 0);
        else if (args && args->kind == Kind::Dict)
            info.train_args = json.build(args, 0);
    }
    return info;
}

}  // namespace crucible::engine
