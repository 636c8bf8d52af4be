#pragma once
// How a person names a GPU, and which CUDA device of this process that is.
//
// Three spellings name a GPU of the machine: its index ("2", the order NVML and nvidia-smi use),
// its UUID ("GPU-8f2c41d0-..."), or a MIG instance's UUID ("MIG-..."). A fourth, "cuda:N", names
// CUDA device N of this process, whatever CUDA_VISIBLE_DEVICES left visible (LibTorch's habit).
// Workers run with CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers the GPUs as NVML does;
// CUDA_VISIBLE_DEVICES then hides some and renumbers the rest from 0, which is undone here.
// No LibTorch or CUDA here: the caller passes the UUIDs CUDA reports for its devices.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crucible {

// CUDA numbers GPUs by PCI bus like NVML only when told; every worker is told.
inline constexpr const char* kCudaDeviceOrderVariable = "CUDA_DEVICE_ORDER";
inline constexpr const char* kCudaDeviceOrderPciBus = "PCI_BUS_ID";

struct GpuRef {
    enum class Kind { MachineIndex, CudaOrdinal, Uuid };
    Kind kind = Kind::MachineIndex;
    int index = -1;    // MachineIndex, CudaOrdinal
    std::string uuid;  // Uuid: lower-case hex with dashes, without the GPU- / MIG- prefix
    bool mig = false;  // Uuid: the text said MIG-
};

// "2", "cuda:2", "GPU-<uuid>", "MIG-<uuid>" (case-insensitive, surrounding spaces ignored);
// nullopt for anything else. A UUID may be a prefix of the full one, as CUDA accepts.
std::optional<GpuRef> parse_gpu_ref(std::string_view text);

// The entries of CUDA_VISIBLE_DEVICES. As CUDA does, the list ends at the first entry that is
// not an index or a UUID ("0,1,x,3" makes 0 and 1 visible; "" makes none visible).
std::vector<GpuRef> parse_visible_devices(std::string_view value);

// Which CUDA device of this process `wanted` is.
//   visible: CUDA_VISIBLE_DEVICES, parsed (nullopt when the variable is unset)
//   device_uuids: the UUID CUDA reports for each of this process's devices, in CUDA's order
//     (as "GPU-<hex>" or bare hex); its size is the process's device count
// Throws InputError("device", ...) saying why when `wanted` is not one of them.
int cuda_ordinal_of(const GpuRef& wanted, const std::optional<std::vector<GpuRef>>& visible,
                    const std::vector<std::string>& device_uuids);

// The text form of a 16-byte UUID as NVML writes it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
std::string format_gpu_uuid(const unsigned char (&bytes)[16]);

}  // namespace crucible
