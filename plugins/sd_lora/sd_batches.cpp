#include "plugins/sd_lora/sd_batches.h"

#include <torch/torch.h>

#include <chrono>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/rank_plan.h"
#include "core/base/sha256.h"
#include "core/data/caption_image.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/vae.h"

namespace crucible::sd {
namespace {

torch::Tensor image_to_tensor(const cv::Mat& rgb) {
    torch::Tensor t = torch::from_blob(rgb.data, {rgb.rows, rgb.cols, 3}, torch::kUInt8).clone();
    return t.permute({2, 0, 1}).to(torch::kFloat32).div(127.5).sub(1.0).unsqueeze(0);
}

class SdBatchSource : public engine::BatchSource {
  public:
    SdBatchSource(const SdTrainingData& data, int rank, int world_size)
        : data_(data), rank_(rank), world_size_(world_size) {
        batches_ = data_.epoch_batches(0);
    }
    std::int64_t batches_per_epoch() const override {
        return static_cast<std::int64_t>(batches_.size());
    }
    std::int64_t items_per_epoch() const override { return data_.items_per_epoch(); }
    void start_epoch(int epoch, std::int64_t index) override {
        epoch_ = epoch;
        batches_ = data_.epoch_batches(epoch);
        next_ = index;
    }
    std::optional<engine::Batch> next() override {
        if (next_ >= batches_per_epoch()) return std::nullopt;
        const auto& entries = batches_[static_cast<std::size_t>(next_)];
        SdBatch whole = data_.make_batch(entries, epoch_, next_);
        ++next_;
        const auto [begin, end] =
            shard_range(0, static_cast<std::int64_t>(entries.size()), rank_, world_size_);
        if (end - begin != static_cast<std::int64_t>(entries.size())) {
            whole.latent_mean = whole.latent_mean.slice(0, begin, end);
            whole.latent_std = whole.latent_std.slice(0, begin, end);
            whole.time_ids = whole.time_ids.slice(0, begin, end);
            whole.captions = std::vector<std::string>(whole.captions.begin() + begin,
                                                      whole.captions.begin() + end);
            whole.first = begin;
            whole.global_rows = static_cast<std::int64_t>(entries.size());
        }
        engine::Batch b;
        b.size = end - begin;
        b.data = std::move(whole);
        return b;
    }

  private:
    const SdTrainingData& data_;
    int rank_, world_size_;
    std::vector<std::vector<std::size_t>> batches_;
    int epoch_ = 0;
    std::int64_t next_ = 0;
};

// SDXL's time ids of an image as the cached latents were made from it: scaled to cover the
// bucket, center-cropped (load_bucket_image without random crop), and flipped after the crop,
// which mirrors the crop's left edge.
std::array<float, 6> time_ids_of(const data::CaptionItem& item, data::BucketSize bucket,
                                 bool flipped) {
    data::Rng unused(0);  // a center crop draws nothing
    const data::CropPlan plan = data::plan_crop(item.width, item.height, bucket, false, unused);
    const int left = flipped ? plan.resized_width - plan.crop_x - bucket.width : plan.crop_x;
    return {static_cast<float>(item.height),   static_cast<float>(item.width),
            static_cast<float>(plan.crop_y),   static_cast<float>(left),
            static_cast<float>(bucket.height), static_cast<float>(bucket.width)};
}

}  // namespace

SdTrainingData::SdTrainingData(data::CaptionDataset dataset, SdDataOptions options,
                               std::uint64_t seed)
    : dataset_(std::move(dataset)), options_(std::move(options)), seed_(seed) {
    const auto buckets = data::make_buckets(options_.buckets);
    std::set<data::BucketSize> used;
    for (std::size_t i = 0; i < dataset_.items.size(); ++i) {
        const auto& item = dataset_.items[i];
        item_bucket_.push_back(
            data::assign_bucket(item.width, item.height, buckets, options_.buckets));
        used.insert(item_bucket_.back());
        for (int r = 0; r < item.repeats; ++r)
            entries_.push_back(i);
    }
    used_buckets_.assign(used.begin(), used.end());
    cache_.resize(dataset_.items.size());
}

std::filesystem::path SdTrainingData::cache_file(std::size_t item, bool flipped) const {
    const auto& it = dataset_.items[item];
    const auto b = item_bucket_[item];
    std::error_code ec;
    const auto stamp = std::filesystem::last_write_time(it.image, ec);
    const std::string key = path_to_utf8(it.image) + "|" + std::to_string(b.width) + "x" +
                            std::to_string(b.height) + "|" + (flipped ? "flip" : "") + "|" +
                            std::to_string(ec ? 0 : stamp.time_since_epoch().count());
    return options_.cache_dir / (sha256_hex(key).substr(0, 32) + ".safetensors");
}

SdTrainingData::Latent& SdTrainingData::latent(std::size_t item, bool flipped) const {
    auto& slot = cache_[item][flipped ? 1 : 0];
    if (!slot) throw Error("latent of " + path_to_utf8(dataset_.items[item].image) + " not cached");
    return *slot;
}

double SdTrainingData::cache_latents(AutoencoderKLImpl& vae, torch::Device device,
                                     const std::function<void(const std::string&)>& log) {
    device_ = device;
    torch::NoGradGuard no_grad;
    const auto start = std::chrono::steady_clock::now();
    double encode_s = 0;
    std::size_t encoded = 0, loaded = 0;
    if (!options_.cache_dir.empty()) std::filesystem::create_directories(options_.cache_dir);
    for (std::size_t i = 0; i < dataset_.items.size(); ++i) {
        for (int f = 0; f < (options_.flip ? 2 : 1); ++f) {
            auto& slot = cache_[i][static_cast<std::size_t>(f)];
            if (slot) continue;
            const bool flipped = f == 1;
            if (!options_.cache_dir.empty()) {
                const auto file = cache_file(i, flipped);
                if (std::filesystem::exists(file)) {
                    try {
                        auto t = engine::load_safetensors(file);
                        slot = Latent{t.at("mean"), t.at("std")};
                        ++loaded;
                        continue;
                    } catch (const std::exception&) {
                        // A damaged cache file is re-encoded below.
                    }
                }
            }
            const auto t0 = std::chrono::steady_clock::now();
            data::Rng rng(seed_);  // no random crop: nothing is drawn
            const cv::Mat rgb = data::load_bucket_image(dataset_.items[i].image, item_bucket_[i],
                                                        false, flipped, rng);
            const Posterior p = vae.encode(image_to_tensor(rgb).to(device));
            slot = Latent{p.mean[0].to(torch::kCPU).contiguous(),
                          torch::exp(0.5 * p.logvar[0]).to(torch::kCPU).contiguous()};
            encode_s +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            ++encoded;
            if (!options_.cache_dir.empty())
                engine::save_safetensors(cache_file(i, flipped),
                                         {{"mean", slot->mean}, {"std", slot->std}});
        }
    }
    if (log)
        log("latents: " + std::to_string(encoded) + " encoded, " + std::to_string(loaded) +
            " read from the cache, " +
            std::to_string(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) +
            " s");
    return encode_s;
}

std::vector<std::vector<std::size_t>> SdTrainingData::epoch_batches(int epoch) const {
    std::vector<data::BucketSize> entry_buckets;
    entry_buckets.reserve(entries_.size());
    for (auto i : entries_)
        entry_buckets.push_back(item_bucket_[i]);
    return data::bucket_batches(entry_buckets, options_.batch, seed_, epoch);
}

SdBatch SdTrainingData::make_batch(const std::vector<std::size_t>& entries, int epoch,
                                   std::int64_t index) const {
    SdBatch b;
    b.noise_seed = seed_ * 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(epoch) << 32) ^
                   static_cast<std::uint64_t>(index);
    data::Rng rng(b.noise_seed);
    std::vector<torch::Tensor> means, stds;
    std::vector<float> time_ids;
    for (auto e : entries) {
        const std::size_t item = entries_.at(e);
        const bool flipped = options_.flip && rng.uniform_int(0, 1) == 1;
        const Latent& l = latent(item, flipped);
        means.push_back(l.mean);
        stds.push_back(l.std);
        const auto ids = time_ids_of(dataset_.items[item], item_bucket_[item], flipped);
        time_ids.insert(time_ids.end(), ids.begin(), ids.end());
        b.captions.push_back(
            data::process_caption(dataset_.items[item].caption, options_.captions, rng));
    }
    b.latent_mean = torch::stack(means).to(device_);
    b.latent_std = torch::stack(stds).to(device_);
    b.time_ids = torch::tensor(time_ids).reshape({-1, 6}).to(device_);
    return b;
}

std::unique_ptr<engine::BatchSource> SdTrainingData::batches(int rank, int world_size) {
    return std::make_unique<SdBatchSource>(*this, rank, world_size);
}

}  // namespace crucible::sd
