#pragma once
// The training/validation batch loader: worker threads (not processes), a bounded prefetch
// queue, and results that depend only on the seed — the sample order of an epoch comes from
// (seed, epoch) and every augmentation from (seed, epoch, sample index), so 1 and N threads give
// identical batches. Batches are one contiguous uint8 NCHW RGB buffer plus a box table; the
// engine wraps the buffer in a tensor (no LibTorch here).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/data/augment/augment.h"
#include "core/data/detection_types.h"
#include "core/data/image_io.h"
#include "core/data/loader/recent_images.h"

namespace crucible::data {

// An allocator whose resize() leaves bytes uninitialised: the loader writes every pixel, and
// zero-filling a 20 MB batch first would cost as much as packing it.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = DefaultInitAllocator<U>;
    };
    DefaultInitAllocator() = default;
    template <class U>
    DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};
using PixelBuffer = std::vector<std::uint8_t, DefaultInitAllocator<std::uint8_t>>;

struct LoaderSample {
    std::filesystem::path path;
    std::vector<Box> boxes;  // normalized
};

// Samples of one split of a dataset (paths made absolute against the root); split "" = all.
std::vector<LoaderSample> loader_samples(const DetectionDataset& dataset, const std::string& split);

struct LoaderOptions {
    int batch_size = 16;
    int workers = 2;      // threads; 0 = produce on the consumer's thread when next() is called
    int prefetch = 4;     // batches ready or in progress ahead of the consumer
    bool augment = true;  // training transform (mosaic, affine, HSV, flips); else letterbox
    bool shuffle = true;
    bool drop_last = false;
    // Data-parallel ranks: batch_size is the global batch; rank `shard` of `shards` makes only
    // its even slice of each global batch (positions begin + len*shard/shards up to the next
    // rank's), with the augmentations one process would give those samples. Positions stay
    // global, so a run resumes at the same sample whatever the number of ranks.
    int shard = 0;
    int shards = 1;
    bool cache = false;  // keep decoded, resized images in RAM
    int epochs = 100;    // for close_mosaic
    std::uint64_t seed = 0;
    // OpenCV's own thread pool is switched off (cv::setNumThreads(0), process-wide) when workers
    // start, so the loader's threads are the only parallelism and do not oversubscribe cores.
    bool single_thread_opencv = true;
    // Keep freed memory (canvases, batch buffers) in the process for reuse: the one malloc rule
    // of core/base/allocator.h, process-wide, applied once. Page faults on fresh mappings
    // otherwise cost up to a third of the CPU time with 2 threads.
    bool tune_allocator = true;
    AugmentOptions augment_options;
    ImageLimits limits;
};

// Where training stands in the data: epoch and number of samples of that epoch's order already
// consumed. A batch reports the position after it; starting an epoch there resumes exactly.
struct DataPosition {
    int epoch = 0;
    std::int64_t index = 0;
    bool operator==(const DataPosition&) const = default;
};

struct Batch {
    int size = 0;        // images in this batch (bad samples are left out)
    int imgsz = 0;       // images are imgsz x imgsz
    PixelBuffer pixels;  // size x 3 x imgsz x imgsz, RGB, contiguous
    // One row per box: image index in the batch, class, cx, cy, w, h (normalized).
    std::vector<float> boxes;
    std::vector<std::int64_t> sample_ids;  // dataset index of each image
    DataPosition position;                 // position after this batch
    std::int64_t box_count() const { return static_cast<std::int64_t>(boxes.size() / 6); }
};

// Writes an 8-bit BGR image as RGB planes (3 x rows x cols bytes) at `dst`: one image of a
// Batch's pixel buffer.
void write_rgb_planes(const cv::Mat& bgr, std::uint8_t* dst);

struct BadSample {
    std::int64_t sample = 0;
    std::filesystem::path path;
    std::string message;
};

struct LoaderStats {
    std::int64_t batches = 0;
    std::int64_t images = 0;
    std::int64_t decoded = 0;     // image files read and decoded (mosaic partners included)
    std::int64_t skipped = 0;     // samples left out of batches because their image was bad
    std::int64_t bad_images = 0;  // distinct unreadable images seen (also mosaic partners)
};

// How many samples up to the current one in the epoch's order its mosaic partners are drawn
// from, as the reference draws them from its buffer of the images it decoded last:
// min(dataset size, 8 x batch, 1000). Most partners are then still decoded (RecentImages), so a
// sample costs about one decode instead of four. The first samples of an epoch draw from its
// first window.
std::int64_t mosaic_partner_window(std::int64_t samples, int batch_size);

class BatchLoader {
  public:
    // `on_bad` is called (from a worker thread, once per distinct bad image) with what was wrong.
    BatchLoader(std::vector<LoaderSample> samples, LoaderOptions options,
                std::function<void(const BadSample&)> on_bad = {});
    ~BatchLoader();
    BatchLoader(const BatchLoader&) = delete;
    BatchLoader& operator=(const BatchLoader&) = delete;

    // Starts producing the batches of position.epoch from position.index on. Cancels any epoch
    // in progress.
    void start_epoch(DataPosition position);
    // Next batch in order, or nullopt at the end of the epoch.
    std::optional<Batch> next();

    // Sample order of an epoch (dataset indices), from (seed, epoch) only.
    std::vector<std::int64_t> epoch_order(int epoch) const;
    std::int64_t batches_in_epoch(std::int64_t from_index = 0) const;
    std::int64_t sample_count() const { return static_cast<std::int64_t>(samples_.size()); }
    LoaderStats stats() const;

    // The bad images reported since the last call (each distinct image once), for a consumer
    // that reports them from its own thread instead of from `on_bad` on a worker thread.
    std::vector<BadSample> take_bad_samples();

    // Hands a consumed batch's pixel buffer back for reuse (optional): saves allocating and
    // page-faulting ~20 MB per batch.
    void recycle(Batch&& batch);

    // One sample as the loader makes it (for previews): imgsz x imgsz BGR and pixel boxes.
    LabeledImage make_sample(int epoch, std::int64_t sample);

  private:
    // The sample at `position` of the epoch's order (its mosaic partners depend on where it is).
    LabeledImage make_sample_at(int epoch, const std::vector<std::int64_t>& order,
                                std::int64_t position);
    bool load_resized(std::int64_t sample, LabeledImage& out);
    Batch make_batch(int epoch, std::int64_t first, const std::vector<std::int64_t>& order,
                     std::int64_t batch_index);
    void worker_loop();
    void stop_workers();

    std::vector<LoaderSample> samples_;
    LoaderOptions options_;
    std::function<void(const BadSample&)> on_bad_;
    void report_bad(const BadSample& bad);
    std::mutex bad_mutex_;
    std::vector<BadSample> bad_log_;  // since the last take_bad_samples()

    // RAM cache (options_.cache): one slot per sample, filled once.
    std::vector<LabeledImage> cache_;
    std::vector<std::uint8_t> cache_state_;  // 0 empty, 1 good, 2 bad; guarded by cache_mutex_
    std::mutex cache_mutex_;
    std::vector<std::atomic<bool>> reported_;
    // Without the RAM cache, in training: the images decoded last, for mosaic partners.
    std::unique_ptr<RecentImages> recent_;

    std::mutex pool_mutex_;
    std::vector<PixelBuffer> pool_;  // recycled pixel buffers

    std::atomic<std::int64_t> skipped_{0}, bad_images_{0}, batches_{0}, images_{0}, decoded_{0};

    // Epoch state, guarded by mutex_.
    std::mutex mutex_;
    std::condition_variable work_cv_, ready_cv_;
    bool stopping_ = false;
    std::uint64_t generation_ = 0;  // bumps on every start_epoch; stale results are dropped
    int epoch_ = 0;
    std::int64_t first_index_ = 0;
    std::shared_ptr<const std::vector<std::int64_t>> order_;
    std::int64_t total_batches_ = 0;
    std::int64_t next_to_take_ = 0;    // next batch index a worker will build
    std::int64_t next_to_return_ = 0;  // next batch index next() returns
    std::map<std::int64_t, Batch> ready_;
    std::map<std::int64_t, std::exception_ptr> failed_;
    std::vector<std::thread> threads_;
};

}  // namespace crucible::data
