#include "core/data/loader/batch_loader.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include <opencv2/core.hpp>

#include "core/base/allocator.h"
#include "core/base/error.h"
#include "core/base/rank_plan.h"

namespace crucible::data {

std::vector<LoaderSample> loader_samples(const DetectionDataset& dataset,
                                         const std::string& split) {
    std::vector<LoaderSample> out;
    for (const auto& rec : dataset.images) {
        if (!split.empty() && rec.split != split) continue;
        LoaderSample s;
        s.path =
            rec.path.is_absolute() || dataset.root.empty() ? rec.path : dataset.root / rec.path;
        s.boxes = rec.boxes;
        out.push_back(std::move(s));
    }
    return out;
}

BatchLoader::BatchLoader(std::vector<LoaderSample> samples, LoaderOptions options,
                         std::function<void(const BadSample&)> on_bad)
    : samples_(std::move(samples)),
      options_(std::move(options)),
      on_bad_(std::move(on_bad)),
      reported_(samples_.size()) {
    validate_augment_options(options_.augment_options);
    if (options_.batch_size < 1) throw InputError("batch", "must be at least 1");
    if (options_.shards < 1 || options_.shard < 0 || options_.shard >= options_.shards)
        throw InputError("shard", "rank " + std::to_string(options_.shard) + " of " +
                                      std::to_string(options_.shards) + " ranks");
    if (options_.workers < 0 || options_.workers > 256)
        throw InputError("workers", "must be between 0 and 256");
    if (options_.prefetch < 1) throw InputError("prefetch", "must be at least 1");
    if (options_.tune_allocator) keep_freed_memory_for_reuse();
    if (options_.cache) {
        cache_.resize(samples_.size());
        cache_state_.assign(samples_.size(), 0);
    } else if (options_.augment) {
        // The partner window plus the samples of the batches being made at the same time; at most
        // 1 GiB of pixels (a miss only costs a decode).
        const auto in_flight = static_cast<std::size_t>(options_.prefetch + options_.workers + 1) *
                               static_cast<std::size_t>(options_.batch_size);
        const auto window =
            static_cast<std::size_t>(mosaic_partner_window(sample_count(), options_.batch_size));
        recent_ = std::make_unique<RecentImages>(window + in_flight, std::size_t{1} << 30);
    }
}

BatchLoader::~BatchLoader() {
    stop_workers();
}

void BatchLoader::stop_workers() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_cv_.notify_all();
    ready_cv_.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
}

std::int64_t mosaic_partner_window(std::int64_t samples, int batch_size) {
    return std::max<std::int64_t>(
        1, std::min({samples, std::int64_t{8} * batch_size, std::int64_t{1000}}));
}

std::vector<std::int64_t> BatchLoader::epoch_order(int epoch) const {
    const auto n = static_cast<std::int64_t>(samples_.size());
    if (!options_.shuffle) {
        std::vector<std::int64_t> order(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i)
            order[static_cast<std::size_t>(i)] = i;
        return order;
    }
    Rng rng(derive_seed({options_.seed, 0x0DE5ull, static_cast<std::uint64_t>(epoch)}));
    return random_permutation(n, rng);
}

std::int64_t BatchLoader::batches_in_epoch(std::int64_t from_index) const {
    const std::int64_t left = std::max<std::int64_t>(0, sample_count() - from_index);
    const std::int64_t b = options_.batch_size;
    return options_.drop_last ? left / b : (left + b - 1) / b;
}

LoaderStats BatchLoader::stats() const {
    LoaderStats s;
    s.batches = batches_.load();
    s.images = images_.load();
    s.decoded = decoded_.load();
    s.skipped = skipped_.load();
    s.bad_images = bad_images_.load();
    return s;
}

bool BatchLoader::load_resized(std::int64_t sample, LabeledImage& out) {
    const auto i = static_cast<std::size_t>(sample);
    if (options_.cache) {
        std::lock_guard lock(cache_mutex_);
        if (cache_state_[i] == 1) {
            out = cache_[i];  // shares the pixels; augmentation never writes into its inputs
            return true;
        }
        if (cache_state_[i] == 2) return false;
    }
    if (recent_) {
        if (auto kept = recent_->find(sample)) {
            out = std::move(*kept);
            return true;
        }
    }
    bool good = true;
    try {
        const int imgsz = options_.augment_options.imgsz;
        ++decoded_;
        const cv::Mat image = read_image(samples_[i].path, options_.limits, imgsz);
        out = resize_long_side(image, samples_[i].boxes, imgsz);
        if (recent_) recent_->put(sample, out);
    } catch (const std::exception& e) {
        good = false;
        out = {};
        if (!reported_[i].exchange(true)) {
            ++bad_images_;
            report_bad(BadSample{sample, samples_[i].path, e.what()});
        }
    }
    if (options_.cache) {
        std::lock_guard lock(cache_mutex_);
        if (cache_state_[i] == 0) {
            cache_state_[i] = good ? 1 : 2;
            if (good) cache_[i] = out;
        }
    }
    return good;
}

LabeledImage BatchLoader::make_sample(int epoch, std::int64_t sample) {
    if (sample < 0 || sample >= sample_count())
        throw InputError("sample", std::to_string(sample) + " is out of range");
    const std::vector<std::int64_t> order = epoch_order(epoch);
    const auto at = std::find(order.begin(), order.end(), sample);
    return make_sample_at(epoch, order, at - order.begin());
}

LabeledImage BatchLoader::make_sample_at(int epoch, const std::vector<std::int64_t>& order,
                                         std::int64_t position) {
    const AugmentOptions& ao = options_.augment_options;
    const std::int64_t sample = order[static_cast<std::size_t>(position)];
    Rng rng(derive_seed(
        {options_.seed, static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(sample)}));
    if (options_.augment) {
        const SampleSource load = [this](std::int64_t k, LabeledImage& out) {
            return load_resized(k, out);
        };
        const auto n = static_cast<std::int64_t>(order.size());
        const std::int64_t window = std::min(n, mosaic_partner_window(n, options_.batch_size));
        const std::int64_t first = std::max<std::int64_t>(0, position - window + 1);
        const std::span<const std::int64_t> partners(order.data() + first,
                                                     static_cast<std::size_t>(window));
        return augment_train_sample(sample, partners, load, ao,
                                    mosaic_active(ao, epoch, options_.epochs), rng);
    }
    LabeledImage one;
    if (!load_resized(sample, one)) return {};
    return prepare_val_sample(one, ao);
}

void write_rgb_planes(const cv::Mat& bgr, std::uint8_t* dst) {
    // BGR interleaved -> RGB planes, written straight into the destination.
    const std::size_t plane =
        static_cast<std::size_t>(bgr.rows) * static_cast<std::size_t>(bgr.cols);
    cv::Mat planes[3] = {cv::Mat(bgr.rows, bgr.cols, CV_8U, dst + 2 * plane),
                         cv::Mat(bgr.rows, bgr.cols, CV_8U, dst + plane),
                         cv::Mat(bgr.rows, bgr.cols, CV_8U, dst)};
    cv::split(bgr, planes);
}

Batch BatchLoader::make_batch(int epoch, std::int64_t first, const std::vector<std::int64_t>& order,
                              std::int64_t batch_index) {
    const int s = options_.augment_options.imgsz;
    const std::int64_t n = static_cast<std::int64_t>(order.size());
    const std::int64_t global_begin = first + batch_index * options_.batch_size;
    const std::int64_t global_end = std::min(n, global_begin + options_.batch_size);
    const auto [begin, end] =
        shard_range(global_begin, global_end, options_.shard, options_.shards);
    Batch batch;
    batch.imgsz = s;
    batch.position = DataPosition{epoch, global_end};
    const std::size_t plane = static_cast<std::size_t>(s) * s;
    {
        std::lock_guard lock(pool_mutex_);
        if (!pool_.empty()) {
            batch.pixels = std::move(pool_.back());
            pool_.pop_back();
        }
    }
    batch.pixels.resize(static_cast<std::size_t>(end - begin) * 3 * plane);
    for (std::int64_t p = begin; p < end; ++p) {
        const std::int64_t sample = order[static_cast<std::size_t>(p)];
        LabeledImage img;
        try {
            img = make_sample_at(epoch, order, p);
        } catch (const std::exception& e) {
            // Anything an odd image makes the transforms throw: that sample is bad, not the run.
            img = {};
            const auto i = static_cast<std::size_t>(sample);
            if (!reported_[i].exchange(true)) {
                ++bad_images_;
                report_bad(BadSample{sample, samples_[i].path, e.what()});
            }
        }
        if (img.image.empty()) {
            ++skipped_;
            continue;
        }
        write_rgb_planes(img.image,
                         batch.pixels.data() + static_cast<std::size_t>(batch.size) * 3 * plane);
        const float fs = static_cast<float>(s);
        for (const auto& b : img.boxes) {
            const float row[6] = {
                static_cast<float>(batch.size), static_cast<float>(b.cls), (b.x1 + b.x2) / 2 / fs,
                (b.y1 + b.y2) / 2 / fs,         (b.x2 - b.x1) / fs,        (b.y2 - b.y1) / fs};
            batch.boxes.insert(batch.boxes.end(), row, row + 6);
        }
        batch.sample_ids.push_back(sample);
        ++batch.size;
    }
    batch.pixels.resize(static_cast<std::size_t>(batch.size) * 3 * plane);
    ++batches_;
    images_ += batch.size;
    return batch;
}

void BatchLoader::report_bad(const BadSample& bad) {
    {
        std::lock_guard lock(bad_mutex_);
        bad_log_.push_back(bad);
    }
    if (on_bad_) on_bad_(bad);
}

std::vector<BadSample> BatchLoader::take_bad_samples() {
    std::lock_guard lock(bad_mutex_);
    return std::exchange(bad_log_, {});
}

void BatchLoader::recycle(Batch&& batch) {
    std::lock_guard lock(pool_mutex_);
    if (pool_.size() < static_cast<std::size_t>(options_.prefetch + options_.workers + 2))
        pool_.push_back(std::move(batch.pixels));
}

void BatchLoader::start_epoch(DataPosition position) {
    if (position.epoch < 0 || position.index < 0 || position.index > sample_count())
        throw InputError("data position", "epoch " + std::to_string(position.epoch) + " index " +
                                              std::to_string(position.index) + " is out of range");
    auto order = std::make_shared<const std::vector<std::int64_t>>(epoch_order(position.epoch));
    {
        std::lock_guard lock(mutex_);
        ++generation_;
        epoch_ = position.epoch;
        first_index_ = position.index;
        order_ = std::move(order);
        total_batches_ = batches_in_epoch(position.index);
        next_to_take_ = 0;
        next_to_return_ = 0;
        ready_.clear();
        failed_.clear();
        if (threads_.empty() && options_.workers > 0) {
            for (int i = 0; i < options_.workers; ++i)
                threads_.emplace_back([this] { worker_loop(); });
        }
    }
    work_cv_.notify_all();
}

void BatchLoader::worker_loop() {
    if (options_.single_thread_opencv) cv::setNumThreads(0);
    std::unique_lock lock(mutex_);
    for (;;) {
        work_cv_.wait(lock, [this] {
            return stopping_ || (next_to_take_ < total_batches_ &&
                                 next_to_take_ < next_to_return_ + options_.prefetch);
        });
        if (stopping_) return;
        const std::int64_t b = next_to_take_++;
        const std::uint64_t generation = generation_;
        const int epoch = epoch_;
        const std::int64_t first = first_index_;
        const auto order = order_;
        lock.unlock();
        Batch batch;
        std::exception_ptr error;
        try {
            batch = make_batch(epoch, first, *order, b);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (generation != generation_) continue;  // the epoch was restarted meanwhile
        if (error)
            failed_[b] = error;
        else
            ready_[b] = std::move(batch);
        ready_cv_.notify_all();
    }
}

std::optional<Batch> BatchLoader::next() {
    if (options_.workers == 0) {
        std::int64_t b;
        int epoch;
        std::int64_t first;
        std::shared_ptr<const std::vector<std::int64_t>> order;
        {
            std::lock_guard lock(mutex_);
            if (!order_ || next_to_return_ >= total_batches_) return std::nullopt;
            b = next_to_return_++;
            epoch = epoch_;
            first = first_index_;
            order = order_;
        }
        return make_batch(epoch, first, *order, b);
    }
    std::unique_lock lock(mutex_);
    if (!order_ || next_to_return_ >= total_batches_) return std::nullopt;
    const std::int64_t b = next_to_return_;
    ready_cv_.wait(lock, [&] { return stopping_ || ready_.count(b) > 0 || failed_.count(b) > 0; });
    if (stopping_) return std::nullopt;
    if (auto f = failed_.find(b); f != failed_.end()) {
        const std::exception_ptr error = f->second;
        failed_.erase(f);
        ++next_to_return_;
        work_cv_.notify_all();
        std::rethrow_exception(error);
    }
    auto node = ready_.extract(b);
    ++next_to_return_;
    lock.unlock();
    work_cv_.notify_all();
    return std::move(node.mapped());
}

}  // namespace crucible::data
