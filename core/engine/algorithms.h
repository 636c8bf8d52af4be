#pragma once
// How LibTorch picks its kernels for a run.
//   deterministic: the same run gives the same bits on the same GPU (a kill and resume too):
//     deterministic cuDNN kernels without autotuning, cuBLAS's fixed workspace
//     (CUBLAS_WORKSPACE_CONFIG, read when cuBLAS starts, so this runs before any CUDA work), and
//     LibTorch's deterministic mode, under which an op with no deterministic CUDA kernel fails
//     naming itself instead of silently varying.
//   otherwise: cuDNN times the candidate kernels once per convolution shape and keeps the
//     fastest (benchmark mode), which suits training's fixed-size batches.
namespace crucible::engine {

void configure_algorithms(bool deterministic);

}  // namespace crucible::engine
