#pragma once
// This rank's link to the other ranks of a data-parallel run (DESIGN.md "Distributed
// training"): PyTorch's own c10d runtime, never a transport of ours. Rank 0 serves the TCPStore
// the ranks meet at; collectives on CPU tensors run on ProcessGroupGloo, and on CUDA tensors on
// ProcessGroupNCCL where the build has it (Linux; Windows has no NCCL, so Gloo there, through
// host memory). Gradients are averaged by c10d's Reducer, the engine of PyTorch's DDP: buckets
// of parameters are all-reduced from autograd hooks while the backward pass still runs.
//
// The c10d headers stay in distributed.cpp; the trainer sees only this interface. Every call
// is a collective: all ranks make the same calls in the same order, or the run hangs until the
// timeout ends it.
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/rank_plan.h"

namespace crucible::engine {

// Whether this build's LibTorch carries ProcessGroupNCCL (a CUDA LibTorch on Linux).
bool nccl_available();

// The backend for a rank's GPU tensors from the `dist_backend` option: "gloo" or "nccl" as
// asked, "auto" NCCL for CUDA ranks when available, else Gloo. Throws InputError naming
// dist_backend for NCCL without CUDA ranks or without NCCL in the build.
std::string gpu_collective_backend(const std::string& requested, const std::string& device);

class Collective {
  public:
    // Meets the other ranks (rank 0 serves the store on address.store_port). `timeout` bounds
    // the rendezvous and every later collective: a rank that died or hangs ends the others'
    // wait with an Error naming what timed out. `backend`: the dist_backend option.
    static std::unique_ptr<Collective> connect(const RankAddress& address,
                                               std::chrono::milliseconds timeout,
                                               const std::string& backend = "auto");
    virtual ~Collective() = default;

    virtual int rank() const = 0;
    virtual int world_size() const = 0;
    // "gloo" or "nccl": what carries GPU tensors.
    virtual std::string gpu_backend() const = 0;

    // Copies rank 0's values into every rank's tensors (parameters and buffers at the start).
    virtual void broadcast(std::vector<torch::Tensor> tensors) = 0;
    // Sums `values` over the ranks, in place (double, CPU).
    virtual void sum(std::vector<double>& values) = 0;
    // Sums a tensor over the ranks, in place (what the reducer does to a gradient bucket).
    virtual void sum(torch::Tensor tensor) = 0;
    // The largest `value` any rank holds (stop requests: one rank's is everyone's).
    virtual std::int64_t max(std::int64_t value) = 0;
    // Every rank's bytes, by rank (results gathered for rank 0: sharded validation's matches).
    virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
    virtual void barrier() = 0;

    // Gradient averaging for `params` (the optimized parameters, the same on every rank).
    class GradientSync {
      public:
        virtual ~GradientSync() = default;
        // Call between the forward and the backward pass whose gradients are to be averaged
        // (the last micro-batch before an optimizer step); `outputs` (the loss) lets the reducer
        // find parameters that step did not use. Backward passes without it accumulate locally.
        virtual void prepare(const std::vector<torch::Tensor>& outputs) = 0;
    };
    virtual std::unique_ptr<GradientSync> sync_gradients(const std::vector<torch::Tensor>& params,
                                                         std::int64_t bucket_bytes) = 0;
};

}  // namespace crucible::engine
