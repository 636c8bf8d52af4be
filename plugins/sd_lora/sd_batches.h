#pragma once
// Training batches for the SD LoRA task: caption-folder items (repeats applied) grouped by
// aspect-ratio bucket, each with its VAE posterior (cached in memory or on disk, per image,
// bucket and flip) and its processed caption (dropout / shuffle / keep_tokens drawn from
// (seed, epoch, position)). Order and randomness depend only on (seed, epoch), so a resumed run
// sees the batches the uninterrupted run saw.
#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/data/caption_buckets.h"
#include "core/data/caption_dataset.h"
#include "core/data/caption_text.h"
#include "core/engine/task.h"

namespace crucible::sd {

struct AutoencoderKLImpl;

struct SdBatch {
    torch::Tensor latent_mean, latent_std;  // [B, 4, h, w] on the task's device (unscaled)
    std::vector<std::string> captions;
    // [B, 6] float on the task's device: SDXL's size and crop conditioning of each image (its
    // original height and width, the crop's top and left in the resized image, mirrored for a
    // flipped one, and the bucket's height and width; unet.h kSdxlTimeIds).
    torch::Tensor time_ids;
    std::uint64_t noise_seed = 0;  // noise / timesteps / posterior sample for this batch
    // A data-parallel rank's rows [first, first + rows) of a global batch of `global_rows`: the
    // noise is drawn for the whole global batch and sliced, as one process draws it. 0: whole.
    std::int64_t first = 0;
    std::int64_t global_rows = 0;
};

struct SdDataOptions {
    data::BucketOptions buckets;
    data::CaptionOptions captions;
    bool flip = false;         // random horizontal flips (both orientations are cached)
    bool random_crop = false;  // not with cached latents
    int batch = 1;
    std::filesystem::path cache_dir;  // empty: latents cached in memory only
};

class SdTrainingData {
  public:
    SdTrainingData(data::CaptionDataset dataset, SdDataOptions options, std::uint64_t seed);

    // Encodes every image (both flips when flipping) that is not cached yet. `log` gets
    // progress lines. Returns the seconds spent encoding (for the benchmark).
    double cache_latents(AutoencoderKLImpl& vae, torch::Device device,
                         const std::function<void(const std::string&)>& log = {});

    // Training batches of rank `rank` of `world_size`: its slice of each global batch, with the
    // flips, captions and noise one process draws for those items (SdBatch::first).
    std::unique_ptr<engine::BatchSource> batches(int rank = 0, int world_size = 1);
    std::int64_t images() const { return static_cast<std::int64_t>(dataset_.items.size()); }
    std::int64_t items_per_epoch() const { return static_cast<std::int64_t>(entries_.size()); }
    const data::CaptionDataset& dataset() const { return dataset_; }
    const std::vector<data::BucketSize>& buckets_in_use() const { return used_buckets_; }

    // Pieces a BatchSource needs.
    std::vector<std::vector<std::size_t>> epoch_batches(int epoch) const;
    SdBatch make_batch(const std::vector<std::size_t>& entries, int epoch,
                       std::int64_t index) const;

  private:
    struct Latent {
        torch::Tensor mean, std;  // [4, h, w] CPU float
    };
    std::filesystem::path cache_file(std::size_t item, bool flipped) const;
    Latent& latent(std::size_t item, bool flipped) const;

    data::CaptionDataset dataset_;
    SdDataOptions options_;
    std::uint64_t seed_;
    std::vector<data::BucketSize> item_bucket_;  // per dataset item
    std::vector<std::size_t> entries_;           // dataset item per epoch entry (repeats)
    std::vector<data::BucketSize> used_buckets_;
    mutable std::vector<std::array<std::optional<Latent>, 2>> cache_;
    torch::Device device_{torch::kCPU};
};

}  // namespace crucible::sd
