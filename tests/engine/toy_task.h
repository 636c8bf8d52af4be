#pragma once
// A tiny task for the engine tests: regression with a 2-layer MLP (Linear, BatchNorm1d, ReLU,
// Dropout, Linear) on seeded random data, with a deterministic "loader" whose order depends only
// on (seed, epoch). Registered as `toy.regression` (alias `toy`). Options beyond the engine's:
//   samples, dim, dropout; fitness = "loss" (−val MSE), "decreasing" (1/(epoch+1): only the
//   first epoch is ever best, for early stopping), nan_at_step (loss becomes NaN there),
//   param_groups ("default": the engine's pg0/pg1/pg2; "body_head": two groups of its own).
#include <string>

namespace crucible::engine::toy {

inline constexpr const char* kTaskId = "toy.regression";

// Keeps the registration object linked in (call from main / a test).
void ensure_registered();

// Training steps of this process whose loss ran under a CPU bf16 autocast (the trainer's amp).
long long cpu_bf16_steps();

}  // namespace crucible::engine::toy
