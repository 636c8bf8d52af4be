#pragma once
// A job on several of the agent's GPUs ([B2 6/8]): the submit's `gpus` > 1 asks for that many
// whole GPUs, one data-parallel rank each, the scheduler choosing the closest free set
// (gpu_topology.h); `gpu` = [0, 2] asks for those. At submit the agent checks that it can ever run
// the job and names the ranks' devices as the worker will see them: the scheduler hands the job a
// whole set at once (never part of it) through CUDA_VISIBLE_DEVICES, where they are cuda:0..N-1.
// MIG slices have no peer collectives between them: they take 1-GPU jobs only.
#include <set>
#include <vector>

#include "core/net/api_types.h"

namespace crucible::jobs {

// The agent's GPUs that are split into MIG instances.
std::set<int> mig_gpus(const net::GpuReport& report);

// Checks a submitted job against the agent's GPUs (`gpu_ids`, of which `mig` are split): the
// GPUs it names exist, and several are whole; for several GPUs, sets its `device` option to the
// ranks' devices. Throws InputError naming `gpu`, `gpus` or `device` with what to ask instead.
void plan_gpu_ranks(net::JobInfo& job, const std::vector<int>& gpu_ids, const std::set<int>& mig);

}  // namespace crucible::jobs
