#pragma once
// Reading a tensor's value on the host waits for the device to finish what it was given (on
// CUDA, a stream synchronisation that leaves the GPU idle until the next launch). The training
// step reads values only through these functions, so tests can count how often it does.
#include <torch/torch.h>

#include <cstdint>

namespace crucible::engine {

// The value of a one-element tensor.
double host_double(const torch::Tensor& scalar);
bool host_bool(const torch::Tensor& scalar);
// The tensor on the CPU, contiguous, as double.
torch::Tensor host_doubles(const torch::Tensor& values);

// How many reads the functions above made in this process.
std::uint64_t host_read_count();

}  // namespace crucible::engine
