// SD models: the SD 1.5 UNet and VAE layouts (built on the meta device, no memory) equal the
// reference state dicts name for name and shape for shape; the tiny reference weights give the
// reference outputs; the noise schedule and the DDIM step match the reference scheduler.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/sd_lora/scheduler.h"
#include "plugins/sd_lora/state_dict.h"
#include "plugins/sd_lora/unet.h"
#include "plugins/sd_lora/vae.h"

namespace crucible::sd {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(CRUCIBLE_FIXTURES_DIR) / "sd";

std::map<std::string, std::vector<std::int64_t>> reference_shapes(const char* file) {
    const Json j = read_json_file(kFixtures / file);
    std::map<std::string, std::vector<std::int64_t>> out;
    for (const auto& [name, shape] : j.items())
        out[name] = shape.get<std::vector<std::int64_t>>();
    return out;
}

std::map<std::string, std::vector<std::int64_t>> layout_map(const torch::nn::Module& m) {
    std::map<std::string, std::vector<std::int64_t>> out;
    for (const auto& [name, shape] : parameter_layout(m))
        out[name] = shape;
    return out;
}

void expect_same_layout(const std::map<std::string, std::vector<std::int64_t>>& want,
                        const std::map<std::string, std::vector<std::int64_t>>& got) {
    for (const auto& [name, shape] : want) {
        const auto it = got.find(name);
        if (it == got.end()) {
            ADD_FAILURE() << "missing " << name;
            continue;
        }
        EXPECT_EQ(it->second, shape) << name;
    }
    for (const auto& [name, shape] : got)
        EXPECT_TRUE(want.count(name)) << "extra " << name;
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
    return (a - b).abs().max().item<double>();
}

TEST(SdModel, Sd15UNetLayoutEqualsReference) {
    const auto want = reference_shapes("sd15_unet_state_dict_shapes.json");
    ASSERT_EQ(want.size(), 686u);
    ParamInitGuard meta(ParamInit::Meta);
    UNet unet(UNetConfig::sd15());
    const auto got = layout_map(*unet);
    EXPECT_EQ(got.size(), want.size());
    expect_same_layout(want, got);
    std::int64_t params = 0;
    for (const auto& [name, shape] : got) {
        std::int64_t n = 1;
        for (auto d : shape)
            n *= d;
        params += n;
    }
    EXPECT_EQ(params, 859520964);
}

TEST(SdModel, Sd15VaeLayoutEqualsReference) {
    const auto want = reference_shapes("sd15_vae_state_dict_shapes.json");
    ASSERT_EQ(want.size(), 248u);
    ParamInitGuard meta(ParamInit::Meta);
    AutoencoderKL vae(VaeConfig::sd15());
    const auto got = layout_map(*vae);
    EXPECT_EQ(got.size(), want.size());
    expect_same_layout(want, got);
}

TEST(SdModel, TinyUNetMatchesReferenceOutput) {
    const auto file = SafetensorsFile::open(kFixtures / "tiny_unet_weights.safetensors");
    const UNetConfig config = UNetConfig::from_diffusers_json(
        parse_json(file.metadata().at("config"), "config"), "config");
    EXPECT_EQ(config.block_out_channels, (std::vector<std::int64_t>{32, 64}));
    UNet unet(config);
    load_state_dict(*unet, engine::load_safetensors(file), file.where());
    unet->eval();
    const auto c = engine::load_safetensors(kFixtures / "tiny_unet_case.safetensors");
    torch::NoGradGuard no_grad;
    const torch::Tensor out =
        unet->forward(c.at("sample"), c.at("timesteps"), c.at("encoder_hidden_states"));
    ASSERT_EQ(out.sizes(), c.at("expected").sizes());
    EXPECT_LT(max_abs_diff(out, c.at("expected")), 1e-4);
}

TEST(SdModel, TinyVaeMatchesReferenceOutputs) {
    const auto file = SafetensorsFile::open(kFixtures / "tiny_vae_weights.safetensors");
    const VaeConfig config = VaeConfig::from_diffusers_json(
        parse_json(file.metadata().at("config"), "config"), "config");
    AutoencoderKL vae(config);
    load_state_dict(*vae, engine::load_safetensors(file), file.where());
    vae->eval();
    const auto c = engine::load_safetensors(kFixtures / "tiny_vae_case.safetensors");
    torch::NoGradGuard no_grad;
    const Posterior p = vae->encode(c.at("image"));
    EXPECT_LT(max_abs_diff(p.mean, c.at("posterior_mean")), 1e-4);
    EXPECT_LT(max_abs_diff(p.logvar, c.at("posterior_logvar")), 1e-4);
    const torch::Tensor decoded = vae->decode(c.at("latent"));
    EXPECT_LT(max_abs_diff(decoded, c.at("decoded")), 1e-4);
}

TEST(SdModel, LoadNamesMissingAndMismatchedTensors) {
    UNetConfig config = UNetConfig::tiny();
    UNet unet(config);
    auto sd = base_state_dict(*unet);
    sd.erase("conv_in.weight");
    sd["conv_out.bias"] = torch::zeros({5});
    sd["bogus.weight"] = torch::zeros({1});
    try {
        load_state_dict(*unet, sd, "x.safetensors");
        FAIL() << "no error";
    } catch (const std::exception& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("x.safetensors"), std::string::npos) << m;
        EXPECT_NE(m.find("conv_in.weight"), std::string::npos) << m;
        EXPECT_NE(m.find("conv_out.bias: file [5] vs model [4]"), std::string::npos) << m;
        EXPECT_NE(m.find("bogus.weight"), std::string::npos) << m;
    }
}

TEST(SdModel, UNetHandlesSizesNotDivisibleByEight) {
    torch::manual_seed(0);
    UNet unet(UNetConfig::tiny());
    torch::NoGradGuard no_grad;
    const auto out =
        unet->forward(torch::randn({1, 4, 13, 21}), torch::tensor({5}), torch::randn({1, 7, 32}));
    EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{1, 4, 13, 21}));
}

TEST(SdScheduler, MatchesReferenceCase) {
    const auto c = engine::load_safetensors(kFixtures / "scheduler_case.safetensors");
    NoiseSchedule s;
    EXPECT_LT(max_abs_diff(s.alphas_cumprod(), c.at("alphas_cumprod")), 1e-6);
    const torch::Tensor noisy = s.add_noise(c.at("x0"), c.at("eps"), c.at("t"));
    EXPECT_LT(max_abs_diff(noisy, c.at("noisy")), 1e-5);
    const auto ts = s.ddim_timesteps(20, 1);
    const auto want_ts = c.at("ddim_timesteps");
    ASSERT_EQ(static_cast<std::int64_t>(ts.size()), want_ts.size(0));
    for (std::size_t i = 0; i < ts.size(); ++i)
        EXPECT_EQ(ts[i], want_ts[static_cast<std::int64_t>(i)].item<std::int64_t>()) << i;
    const torch::Tensor prev =
        s.ddim_step(c.at("ddim_eps"), ts[3], ts[3] - 1000 / 20, c.at("ddim_xt"));
    EXPECT_LT(max_abs_diff(prev, c.at("ddim_prev")), 1e-5);
}

TEST(SdScheduler, VelocityAndSnrAreConsistent) {
    NoiseSchedule s;
    torch::manual_seed(4);
    const auto x0 = torch::randn({3, 4, 4, 4});
    const auto eps = torch::randn({3, 4, 4, 4});
    const auto t = torch::tensor({0, 500, 999});
    const auto xt = s.add_noise(x0, eps, t);
    const auto v = s.velocity(x0, eps, t);
    // x0 = sqrt(a)·x_t − sqrt(1−a)·v and eps = sqrt(1−a)·x_t + sqrt(a)·v.
    const auto a = s.alphas_cumprod().index_select(0, t).reshape({3, 1, 1, 1});
    EXPECT_LT(max_abs_diff(torch::sqrt(a) * xt - torch::sqrt(1 - a) * v, x0), 1e-5);
    EXPECT_LT(max_abs_diff(torch::sqrt(1 - a) * xt + torch::sqrt(a) * v, eps), 1e-5);
    const auto snr = s.snr(t);
    EXPECT_LT(max_abs_diff(snr, a.reshape({3}) / (1 - a.reshape({3}))), 1e-3);
    EXPECT_GT(snr[0].item<double>(), snr[1].item<double>());
    EXPECT_GT(snr[1].item<double>(), snr[2].item<double>());
    EXPECT_THROW(s.ddim_timesteps(0), InputError);
    EXPECT_THROW(s.ddim_timesteps(1001), InputError);
}

}  // namespace
}  // namespace crucible::sd
