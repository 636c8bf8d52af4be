#include "core/engine/algorithms.h"

#include <ATen/Context.h>

#include "core/base/environment.h"

namespace crucible::engine {

void configure_algorithms(bool deterministic) {
    auto& context = at::globalContext();
    if (deterministic) set_environment_variable("CUBLAS_WORKSPACE_CONFIG", ":4096:8", false);
    context.setDeterministicAlgorithms(deterministic, false);
    context.setDeterministicCuDNN(deterministic);
    context.setBenchmarkCuDNN(!deterministic);
}

}  // namespace crucible::engine
