// c10d's headers want USE_C10D_GLOO defined and pull in Gloo's own headers (Debian's
// libgloo-dev; the LibTorch zip on Windows ships them): kept to this file.
#define USE_C10D_GLOO 1
#include "core/engine/distributed.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
// LibTorch's CMake defines USE_C10D_NCCL for a CUDA build with NCCL; Windows has none.
#if defined(USE_C10D_NCCL) && !defined(_WIN32)
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define CRUCIBLE_HAVE_NCCL 1
#endif

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::engine {
namespace {

using c10d::ProcessGroup;

// 25 MiB buckets as PyTorch's DDP, with a small first one so that the last layers' gradients
// (ready first in the backward pass) start travelling early.
constexpr std::int64_t kFirstBucketBytes = 1 << 20;

class ReducerSync : public Collective::GradientSync {
  public:
    ReducerSync(const c10::intrusive_ptr<ProcessGroup>& group, std::vector<torch::Tensor> params,
                std::int64_t bucket_bytes) {
        const std::vector<bool> sparse(params.size(), false);
        const auto bytes = static_cast<std::size_t>(bucket_bytes);
        auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
            params, {kFirstBucketBytes, bytes}, sparse, {}, {});
        // Buckets in the reverse order of the parameters: the order backward makes gradients.
        std::reverse(buckets.begin(), buckets.end());
        std::reverse(limits.begin(), limits.end());
        std::vector<std::int64_t> limit_list(limits.begin(), limits.end());
        reducer_ = std::make_shared<c10d::Reducer>(
            std::move(params), std::move(buckets), group, sparse, bucket_bytes,
            /*find_unused_parameters=*/true, /*gradient_as_bucket_view=*/false,
            std::unordered_map<std::size_t, std::string>{}, kFirstBucketBytes,
            /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
            std::move(limit_list));
    }

    void prepare(const std::vector<torch::Tensor>& outputs) override {
        reducer_->prepare_for_forward();
        reducer_->prepare_for_backward(outputs);
    }

  private:
    std::shared_ptr<c10d::Reducer> reducer_;
};

// A socket listening on host:port, for the store to take over (TCPStoreOptions::masterListenFd).
int listening_socket(const std::string& host, int port) {
    namespace asio = boost::asio;
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(io);
    const asio::ip::tcp::endpoint at(asio::ip::make_address(host),
                                     static_cast<unsigned short>(port));
    boost::system::error_code ec;
    acceptor.open(at.protocol(), ec);
#ifndef _WIN32
    // On Windows SO_REUSEADDR would let another process bind the same port over the store's.
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
#endif
    if (!ec) acceptor.bind(at, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        throw Error("cannot serve the rendezvous store at " + host + ":" + std::to_string(port) +
                    ": " + ec.message());
    return static_cast<int>(acceptor.release());
}

// A run over several servers: Gloo's listener is bound (its port is in the system's table for
// the launcher to find), and the other servers' ranks become reachable on this server's loopback
// once the launcher has its proxies up and writes the file. Gloo tries a connection only a few
// times, so it must not start before.
void wait_for_mesh(const RankAddress& a, std::chrono::milliseconds timeout) {
    const std::filesystem::path ready = path_from_utf8(a.mesh_ready);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::error_code ec;
    while (!std::filesystem::exists(ready, ec)) {
        if (std::chrono::steady_clock::now() >= deadline)
            throw Error("rank " + std::to_string(a.rank) +
                        " could not meet the others: the launcher did not reach the other "
                        "servers' ranks within " +
                        std::to_string(timeout.count() / 1000) + " s");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// Gloo for CPU tensors and, unless NCCL takes them, for GPU tensors.
class C10dCollective : public Collective {
  public:
    C10dCollective(const RankAddress& a, std::chrono::milliseconds timeout,
                   const std::string& gpu_backend)
        : rank_(a.rank), world_size_(a.world_size), gpu_backend_(gpu_backend) {
        c10d::TCPStoreOptions so;
        so.port = static_cast<std::uint16_t>(a.store_port);
        so.isServer = a.rank == 0;
        so.numWorkers = a.world_size;
        so.waitWorkers = true;
        so.timeout = timeout;
#ifdef _WIN32
        so.useLibUV = false;  // LibTorch for Windows is built without libuv
#endif
        // Left to itself the store listens on every address of the machine, open to anyone
        // who finds the port; rank 0 hands it a socket bound to the store's own address
        // (loopback: other servers come through the launchers' gate, rendezvous_tunnel.h).
        if (so.isServer) so.masterListenFd = listening_socket(a.store_host, a.store_port);
        store_ = c10::make_intrusive<c10d::TCPStore>(a.store_host, so);
        auto options = c10d::ProcessGroupGloo::Options::create(timeout);
        // Gloo binds loopback, never the machine's default address (which may face a network):
        // 127.0.0.1 when the run is on one server, the rank's own loopback address when it is
        // not (the other servers reach it through the launchers, rendezvous_tunnel.h).
        options->devices.push_back(
            c10d::ProcessGroupGloo::createDeviceForHostname(a.host.empty() ? "127.0.0.1" : a.host));
        if (!a.mesh_ready.empty()) wait_for_mesh(a, timeout);
        auto gloo =
            c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank_, world_size_, options);
        group_ = c10::make_intrusive<ProcessGroup>(store_, rank_, world_size_);
        group_->setDefaultBackend(ProcessGroup::BackendType::GLOO);
        group_->setBackend(c10::DeviceType::CPU, ProcessGroup::BackendType::GLOO, gloo);
        if (gpu_backend_ == "nccl")
            set_nccl_backend(a, timeout);
        else
            group_->setBackend(c10::DeviceType::CUDA, ProcessGroup::BackendType::GLOO, gloo);
    }

    int rank() const override {
        return rank_;
    }
    int world_size() const override {
        return world_size_;
    }
    std::string gpu_backend() const override {
        return gpu_backend_;
    }

    void broadcast(std::vector<torch::Tensor> tensors) override {
        torch::NoGradGuard no_grad;  // parameters are leaves that require grad
        c10d::broadcast_coalesced(group_, tensors, 64u << 20, 0);
    }

    void sum(std::vector<double>& values) override {
        if (values.empty()) return;
        const torch::Tensor t =
            torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64));
        sum(t);
        const auto* p = t.data_ptr<double>();
        std::copy(p, p + values.size(), values.begin());
    }

    void sum(torch::Tensor tensor) override {
        std::vector<torch::Tensor> t = {std::move(tensor)};
        group_->allreduce(t)->wait();
    }

    std::int64_t max(std::int64_t value) override {
        std::vector<torch::Tensor> t = {torch::tensor({value}, torch::kInt64)};
        c10d::AllreduceOptions o;
        o.reduceOp = c10d::ReduceOp::MAX;
        group_->allreduce(t, o)->wait();
        return t[0].item<std::int64_t>();
    }

    void barrier() override {
        group_->barrier()->wait();
    }

    std::vector<std::string> all_gather(const std::string& mine) override {
        // Sizes first, then one buffer where each rank fills its own stretch and leaves the
        // others zero: their sum is every rank's bytes side by side.
        std::vector<double> sizes(static_cast<std::size_t>(world_size_), 0.0);
        sizes[static_cast<std::size_t>(rank_)] = static_cast<double>(mine.size());
        sum(sizes);
        std::int64_t total = 0, offset = 0;
        for (int r = 0; r < world_size_; ++r) {
            if (r == rank_) offset = total;
            total += static_cast<std::int64_t>(sizes[static_cast<std::size_t>(r)]);
        }
        torch::Tensor buffer = torch::zeros({std::max<std::int64_t>(total, 1)}, torch::kUInt8);
        if (!mine.empty())
            std::memcpy(buffer.data_ptr<std::uint8_t>() + offset, mine.data(), mine.size());
        sum(buffer);
        std::vector<std::string> out;
        const auto* bytes = reinterpret_cast<const char*>(buffer.data_ptr<std::uint8_t>());
        std::int64_t at = 0;
        for (int r = 0; r < world_size_; ++r) {
            const auto n = static_cast<std::int64_t>(sizes[static_cast<std::size_t>(r)]);
            out.emplace_back(bytes + at, static_cast<std::size_t>(n));
            at += n;
        }
        return out;
    }

    std::unique_ptr<GradientSync> sync_gradients(const std::vector<torch::Tensor>& params,
                                                 std::int64_t bucket_bytes) override {
        return std::make_unique<ReducerSync>(group_, params, bucket_bytes);
    }

  private:
    // NCCL's communicators are made on the first collective, on the current CUDA device: this
    // rank's. Its keys go under their own prefix of the store Gloo also uses.
    void set_nccl_backend([[maybe_unused]] const RankAddress& a,
                          [[maybe_unused]] std::chrono::milliseconds timeout) {
#ifdef CRUCIBLE_HAVE_NCCL
        const auto device = c10::Device(a.device);
        if (device.has_index()) c10::cuda::set_device(device.index());
        auto options = c10d::ProcessGroupNCCL::Options::create();
        options->timeout = timeout;
        auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
            c10::make_intrusive<c10d::PrefixStore>("nccl", store_), rank_, world_size_, options);
        group_->setBackend(c10::DeviceType::CUDA, ProcessGroup::BackendType::NCCL, nccl);
#else
        throw Error("this build has no NCCL");  // gpu_collective_backend refuses it first
#endif
    }

    int rank_, world_size_;
    std::string gpu_backend_;
    c10::intrusive_ptr<c10d::Store> store_;
    c10::intrusive_ptr<ProcessGroup> group_;
};

}  // namespace

bool nccl_available() {
#ifdef CRUCIBLE_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

std::string gpu_collective_backend(const std::string& requested, const std::string& device) {
    const bool cuda = device.rfind("cuda", 0) == 0;
    if (requested == "gloo") return "gloo";
    if (requested == "nccl") {
        if (!cuda)
            throw InputError("dist_backend",
                             "nccl carries CUDA tensors only; this rank's device "
                             "is '" +
                                 device + "' (use gloo, or auto)");
        if (!nccl_available())
            throw InputError("dist_backend",
                             "this build has no NCCL (Windows, or a LibTorch without it): use "
                             "gloo, or auto");
        return "nccl";
    }
    if (requested != "auto")
        throw InputError("dist_backend", "'" + requested + "' is not auto, gloo or nccl");
    return cuda && nccl_available() ? "nccl" : "gloo";
}

std::unique_ptr<Collective> Collective::connect(const RankAddress& address,
                                                std::chrono::milliseconds timeout,
                                                const std::string& backend) {
    check_rank_address(address);
    const std::string gpu_backend = gpu_collective_backend(backend, address.device);
    try {
        return std::make_unique<C10dCollective>(address, timeout, gpu_backend);
    } catch (const c10::Error& e) {
        const std::string what = e.what();
        throw Error("rank " + std::to_string(address.rank) + " of " +
                    std::to_string(address.world_size) + " could not meet the others at " +
                    address.store_host + ":" + std::to_string(address.store_port) + ": " +
                    what.substr(0, what.find('\n')));
    }
}

}  // namespace crucible::engine
