#include "core/engine/threads.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <thread>

namespace crucible::engine {

int configure_cpu_threads(int requested) {
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int n = requested > 0 ? requested : hardware;
    if (at::get_num_threads() != n) at::set_num_threads(n);
    return at::get_num_threads();
}

}  // namespace crucible::engine
