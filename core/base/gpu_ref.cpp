#include "core/base/gpu_ref.h"

#include <cctype>
#include <cstdio>

#include "core/base/error.h"

namespace crucible {

namespace {

std::string lower_trimmed(std::string_view text) {
    std::size_t begin = 0, end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])))
        ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])))
        --end;
    std::string out;
    for (char c : text.substr(begin, end - begin))
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::optional<int> small_index(std::string_view digits) {
    if (digits.empty() || digits.size() > 3 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    return std::stoi(std::string(digits));
}

// The hex digits of a UUID, without dashes or prefix: what two spellings are compared by.
std::string hex_of(std::string_view uuid) {
    std::string text = lower_trimmed(uuid);
    if (text.starts_with("gpu-") || text.starts_with("mig-")) text = text.substr(4);
    std::string out;
    for (char c : text)
        if (c != '-') out += c;
    return out;
}

std::string spelled(const GpuRef& ref) {
    switch (ref.kind) {
        case GpuRef::Kind::MachineIndex:
            return "GPU " + std::to_string(ref.index);
        case GpuRef::Kind::CudaOrdinal:
            return "cuda:" + std::to_string(ref.index);
        case GpuRef::Kind::Uuid:
            return (ref.mig ? "MIG-" : "GPU-") + ref.uuid;
    }
    return "?";
}

std::string visible_text(const std::vector<GpuRef>& visible) {
    std::string out;
    for (const auto& v : visible)
        out += (out.empty() ? "" : ",") + spelled(v);
    return out.empty() ? "none" : out;
}

// The device whose UUID starts with `hex`; throws when none or several do.
int ordinal_by_uuid(const std::string& hex, const std::string& shown,
                    const std::vector<std::string>& device_uuids) {
    int found = -1;
    for (std::size_t i = 0; i < device_uuids.size(); ++i) {
        if (!hex_of(device_uuids[i]).starts_with(hex)) continue;
        if (found >= 0)
            throw InputError("device", shown + " matches several GPUs; give more of the UUID");
        found = static_cast<int>(i);
    }
    if (found < 0)
        throw InputError("device", shown + " is not among this process's " +
                                       std::to_string(device_uuids.size()) +
                                       " GPUs (`crucible agent doctor` lists them)");
    return found;
}

}  // namespace

std::optional<GpuRef> parse_gpu_ref(std::string_view raw) {
    const std::string text = lower_trimmed(raw);
    GpuRef ref;
    if (text.starts_with("cuda:")) {
        const auto index = small_index(std::string_view(text).substr(5));
        if (!index) return std::nullopt;
        ref.kind = GpuRef::Kind::CudaOrdinal;
        ref.index = *index;
        return ref;
    }
    if (text.starts_with("gpu-") || text.starts_with("mig-")) {
        const std::string body = text.substr(4);
        if (body.empty() || body.size() > 36 ||
            body.find_first_not_of("0123456789abcdef-") != std::string::npos)
            return std::nullopt;
        ref.kind = GpuRef::Kind::Uuid;
        ref.uuid = body;
        ref.mig = text.starts_with("mig-");
        return ref;
    }
    const auto index = small_index(text);
    if (!index) return std::nullopt;
    ref.index = *index;
    return ref;
}

std::vector<GpuRef> parse_visible_devices(std::string_view value) {
    std::vector<GpuRef> out;
    std::size_t start = 0;
    while (start <= value.size()) {
        const std::size_t comma = value.find(',', start);
        const auto item =
            value.substr(start, comma == std::string_view::npos ? value.npos : comma - start);
        const auto ref = parse_gpu_ref(item);
        if (!ref || ref->kind == GpuRef::Kind::CudaOrdinal) break;
        out.push_back(*ref);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

int cuda_ordinal_of(const GpuRef& wanted, const std::optional<std::vector<GpuRef>>& visible,
                    const std::vector<std::string>& device_uuids) {
    const int count = static_cast<int>(device_uuids.size());
    const std::string shown = spelled(wanted);
    if (count == 0)
        throw InputError("device",
                         shown + " was asked for, but this process sees no CUDA device" +
                             (visible ? " (CUDA_VISIBLE_DEVICES=" + visible_text(*visible) + ")"
                                      : std::string()) +
                             "; use device=cpu");
    switch (wanted.kind) {
        case GpuRef::Kind::CudaOrdinal:
            if (wanted.index >= count)
                throw InputError("device", shown + " does not exist: this process sees " +
                                               std::to_string(count) + " CUDA device(s)");
            return wanted.index;
        case GpuRef::Kind::Uuid:
            return ordinal_by_uuid(hex_of(wanted.uuid), shown, device_uuids);
        case GpuRef::Kind::MachineIndex:
            break;
    }
    if (!visible) {
        if (wanted.index >= count)
            throw InputError("device", shown + " does not exist (this machine has " +
                                           std::to_string(count) + ")");
        return wanted.index;
    }
    // CUDA renumbered the visible GPUs from 0: the machine's GPU N is where N stands in the list.
    for (std::size_t i = 0; i < visible->size() && static_cast<int>(i) < count; ++i) {
        const GpuRef& v = (*visible)[i];
        if (v.kind == GpuRef::Kind::MachineIndex && v.index == wanted.index)
            return static_cast<int>(i);
    }
    throw InputError("device", shown + " is not visible to this process (CUDA_VISIBLE_DEVICES=" +
                                   visible_text(*visible) +
                                   "); name it by UUID or as cuda:N, N counting the visible ones");
}

std::string format_gpu_uuid(const unsigned char (&b)[16]) {
    char text[64];
    std::snprintf(text, sizeof text,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    return text;
}

}  // namespace crucible
