#!/usr/bin/env python3
"""The reference side of build/tests/sd_lora/bench_sd_lora: diffusers' UNet2DConditionModel with
the tiny config of /work/shared/fixtures/sd/tiny_unet_weights.safetensors (channels 32, 64,
cross-attention dim 32, 8 heads, 2 layers per block), randomly initialised with seed 0 as the
Crucible bench does, with a PEFT LoRA (rank 8, alpha 8, dropout 0) on the same 72 modules as
Crucible's unet_lora_targets(): in every spatial transformer, proj_in / proj_out (1x1 convs) and
every Linear of the transformer blocks (attn1/attn2 to_q, to_k, to_v, to_out.0, ff.net.0.proj,
ff.net.2). A training iteration: noise, add_noise (DDPM scaled-linear betas 0.00085..0.012, 1000
steps), UNet forward, MSE, zero_grad, backward, AdamW(lr=1e-4) step; batch 1,
latents px/2 (the tiny VAE downsamples by 2), text context [1, 77, 32]. With and without
gradient checkpointing, the cases alternating `rounds` times, the fastest round counting; and the
tiny VAE's encode (the latent cache), as the Crucible bench does.

  sd_reference.py [--steps 5] [--rounds 2] [--threads 2] [--px 64 128] [--no-mallopt] [--no-vae]

Memory, as the Crucible bench counts it (live CPU tensor bytes, exact per case): measured in a
separate profiled pass of each case, one step after the warm-up (the profiler's allocation
records, total_allocated): `peak_mb` the peak of everything live, `step_mb` that peak less what
was live before the step (weights, optimizer state).
By default glibc's malloc gets the bench's settings (M_MMAP_THRESHOLD 32 MB, M_TRIM_THRESHOLD
512 MB), so both sides page-fault alike; --no-mallopt keeps Python's defaults.
"""
import argparse
import json
import os
import time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--px", type=int, nargs="+", default=[64, 128])
ap.add_argument("--no-mallopt", action="store_true")
ap.add_argument("--no-vae", action="store_true")
ap.add_argument("--no-train", action="store_true")
ap.add_argument("--fixture", default=None, help="tiny_unet_weights.safetensors (for its config)")
ap.add_argument("--unet", choices=["tiny", "tiny_sdxl"], default="tiny",
                help="tiny_sdxl: SDXL's structure at the tiny sizes (Crucible's UNetConfig::tiny_sdxl)")
ARGS = ap.parse_args()

os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)
os.environ["CUDA_VISIBLE_DEVICES"] = ""

if not ARGS.no_mallopt:
    import ctypes

    _libc = ctypes.CDLL("libc.so.6")
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    _libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
    _libc.mallopt(M_TRIM_THRESHOLD, 512 << 20)

import warnings  # noqa: E402

warnings.filterwarnings("ignore")
import torch  # noqa: E402

torch.set_num_threads(ARGS.threads)
import diffusers  # noqa: E402
import peft  # noqa: E402
from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel  # noqa: E402
from safetensors import safe_open  # noqa: E402

diffusers.utils.logging.set_verbosity_error()

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.environ.get("CRUCIBLE_SHARED_DIR", os.path.join(HERE, "..", "..", "..", "..", "shared"))
UNET_FIXTURE = ARGS.fixture or os.path.join(FIXTURES, "fixtures", "sd", "tiny_unet_weights.safetensors")
VAE_FIXTURE = os.path.join(os.path.dirname(UNET_FIXTURE), "tiny_vae_weights.safetensors")

# The tiny configs (the fixtures' metadata; the same values as Crucible's UNetConfig::tiny()).
TINY_UNET = {"sample_size": 32, "in_channels": 4, "out_channels": 4,
             "down_block_types": ["CrossAttnDownBlock2D", "DownBlock2D"],
             "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D"], "block_out_channels": [32, 64],
             "layers_per_block": 2, "cross_attention_dim": 32, "attention_head_dim": 8, "norm_num_groups": 32}
TINY_VAE = {"in_channels": 3, "out_channels": 3, "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
            "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D"], "block_out_channels": [32, 64],
            "latent_channels": 4, "norm_num_groups": 32, "sample_size": 64}


def fixture_config(path, fallback):
    if os.path.exists(path):
        with safe_open(path, "pt") as f:
            meta = f.metadata() or {}
        if "config" in meta:
            return json.loads(meta["config"]), path
    return dict(fallback), None


# SDXL's structure at the tiny sizes: the same values as Crucible's UNetConfig::tiny_sdxl().
TINY_SDXL_UNET = {"sample_size": 32, "in_channels": 4, "out_channels": 4,
                  "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D"],
                  "up_block_types": ["CrossAttnUpBlock2D", "UpBlock2D"], "block_out_channels": [32, 64],
                  "layers_per_block": 2, "cross_attention_dim": 64, "attention_head_dim": [2, 4],
                  "transformer_layers_per_block": [1, 2], "use_linear_projection": True,
                  "addition_embed_type": "text_time", "addition_time_embed_dim": 8,
                  "projection_class_embeddings_input_dim": 32 + 6 * 8, "norm_num_groups": 32}

if ARGS.unet == "tiny_sdxl":
    UNET_CONFIG, UNET_CONFIG_FROM = dict(TINY_SDXL_UNET), "built-in tiny SDXL config"
else:
    UNET_CONFIG, UNET_CONFIG_FROM = fixture_config(UNET_FIXTURE, TINY_UNET)
VAE_CONFIG, VAE_CONFIG_FROM = fixture_config(VAE_FIXTURE, TINY_VAE)


def lora_targets(unet):
    """Crucible's unet_lora_targets(): inside `.attentions.N.`, proj_in / proj_out and every
    Linear of transformer_blocks."""
    out = []
    for name, module in unet.named_modules():
        if ".attentions." not in f".{name}":
            continue
        proj = name.endswith(".proj_in") or name.endswith(".proj_out")
        in_block = ".transformer_blocks." in name
        if isinstance(module, torch.nn.Linear) and (proj or in_block):
            out.append(name)
        elif isinstance(module, torch.nn.Conv2d) and proj:
            out.append(name)
    return out


def build_case(checkpointing):
    torch.manual_seed(0)
    unet = UNet2DConditionModel(**UNET_CONFIG)
    unet.requires_grad_(False)
    unet.train()
    if checkpointing:
        unet.enable_gradient_checkpointing()
    targets = lora_targets(unet)
    unet.add_adapter(peft.LoraConfig(r=8, lora_alpha=8, lora_dropout=0.0, init_lora_weights=True,
                                     target_modules=targets))
    params = [p for p in unet.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)
    schedule = DDPMScheduler(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012,
                             beta_schedule="scaled_linear")
    return unet, opt, schedule, len(targets), sum(p.numel() for p in params)


def train_case(px, checkpointing, steps, profiled=False):
    unet, opt, schedule, n_targets, trainable = build_case(checkpointing)
    side = px // 2
    latents = torch.randn(1, 4, side, side)
    ctx = torch.randn(1, 77, UNET_CONFIG["cross_attention_dim"])
    added = None
    if UNET_CONFIG.get("addition_embed_type") == "text_time":  # SDXL's pooled text and time ids
        pooled = UNET_CONFIG["projection_class_embeddings_input_dim"] - 6 * UNET_CONFIG["addition_time_embed_dim"]
        added = {"text_embeds": torch.randn(1, pooled), "time_ids": torch.full((1, 6), float(px))}

    def step():
        noise = torch.randn_like(latents)
        t = torch.randint(0, 1000, (1,), dtype=torch.long)
        pred = unet(schedule.add_noise(latents, noise, t), t, encoder_hidden_states=ctx,
                    added_cond_kwargs=added).sample
        loss = torch.nn.functional.mse_loss(pred, noise)
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()  # warm-up; creates the optimizer state
    opt.zero_grad()
    t0 = time.perf_counter()
    if profiled:
        with torch.profiler.record_function("crucible_measured_steps"):
            for _ in range(steps):
                step()
    else:
        for _ in range(steps):
            step()
    seconds = time.perf_counter() - t0
    return steps / seconds, n_targets, trainable


def profiled_memory(fn):
    """(peak MB, MB live before the 'crucible_measured_steps' range) of live CPU tensor bytes."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    allocs, mark = [], None

    def walk(nodes):
        nonlocal mark
        for n in nodes:
            if n.tag == _EventType.Allocation:
                allocs.append((n.start_time_ns, n.extra_fields.total_allocated))
            elif n.name == "crucible_measured_steps":
                mark = (n.start_time_ns, n.start_time_ns + n.duration_time_ns)
            walk(n.children)

    walk(prof.profiler.kineto_results.experimental_event_tree())
    allocs.sort()
    mb = 1024.0 * 1024.0
    if mark is None:
        return max(a[1] for a in allocs) / mb, 0.0
    before = [a[1] for a in allocs if a[0] < mark[0]]
    inside = [a[1] for a in allocs if mark[0] <= a[0] <= mark[1]]
    live_before = before[-1] if before else 0
    peak = max(inside + [live_before])
    return peak / mb, live_before / mb


def emit(obj):
    print(json.dumps({"side": "reference", "bench": "sd", "impl": f"diffusers {diffusers.__version__} + peft "
                      f"{peft.__version__}", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      **obj}), flush=True)


def main():
    if not ARGS.no_train:
        for px in ARGS.px:
            best = {False: 0.0, True: 0.0}
            info = {}
            for _ in range(ARGS.rounds):
                for ckpt in (False, True):
                    it_s, n_targets, trainable = train_case(px, ckpt, ARGS.steps)
                    best[ckpt] = max(best[ckpt], it_s)
                    info = {"lora_modules": n_targets, "trainable": trainable}
            for ckpt in (False, True):
                peak, before = profiled_memory(lambda: train_case(px, ckpt, 1, profiled=True))
                emit({"case": "train", "px": px, "checkpointing": ckpt, "steps": ARGS.steps, "rounds": ARGS.rounds,
                      "it_s": round(best[ckpt], 3), "peak_mb": round(peak, 1), "step_mb": round(peak - before, 1),
                      "unet": ARGS.unet, "unet_config": UNET_CONFIG_FROM or "built-in tiny config",
                      "mallopt": not ARGS.no_mallopt, **info})
    if not ARGS.no_vae:
        torch.manual_seed(0)
        vae = AutoencoderKL(**VAE_CONFIG).eval()
        for px in ARGS.px:
            image = torch.rand(1, 3, px, px) * 2 - 1
            with torch.no_grad():
                vae.encode(image).latent_dist.mean  # warm-up
                t0 = time.perf_counter()
                for _ in range(ARGS.steps):
                    vae.encode(image).latent_dist.mean
                seconds = time.perf_counter() - t0
            emit({"case": "vae_encode", "px": px, "steps": ARGS.steps, "images_s": round(ARGS.steps / seconds, 3)})


if __name__ == "__main__":
    main()
