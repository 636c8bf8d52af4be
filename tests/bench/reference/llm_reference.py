#!/usr/bin/env python3
"""The reference side of build/tests/llm_lora/bench_llm_step: training steps (forward, loss,
backward, AdamW) of a randomly initialised stories15M-sized Llama in transformers (dim 288,
6 layers, 6 heads, 6 KV heads, hidden 768, vocab 32000, 256 positions, RMSNorm eps 1e-5,
untied embeddings, SDPA attention), with a PEFT LoRA (r=8, alpha=16, dropout 0 on q_proj and
v_proj: Crucible's LoraSpec defaults), with full fine-tuning and with LoRA + gradient
checkpointing. Each mode runs in a fresh child process, as in the Crucible bench, so the peak
RSS of one does not mix with another's. Prints one JSON object per mode.

  llm_reference.py [--steps 5] [--batch 4] [--seq 256] [--threads 2] [--modes lora full lora_ckpt]

As in bench_llm_step: torch.manual_seed(0), random tokens as inputs and labels (the loss shifts
them), one warm-up step, then `steps` timed steps; AdamW(lr=1e-4) with torch's defaults
(weight decay 0.01, the same as LibTorch's AdamWOptions). Peak RSS is getrusage's ru_maxrss of
the child; `baseline_rss_mb` is the RSS after importing torch, transformers and peft, before the
model exists, and `step_tensor_mb` the peak of live CPU tensor bytes during one extra
(profiled) step above what was live before it (torch's allocator counter, through the profiler).
"""
import argparse
import json
import os
import subprocess
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--modes", nargs="+", default=["lora", "full", "lora_ckpt"],
                   choices=["lora", "full", "lora_ckpt"])
    p.add_argument("--profile", metavar="FILE",
                   help="write a Chrome trace (ops with input shapes) of one LoRA step after the warm-up "
                        "to FILE and measure nothing else; profile_table.py sums it per op")
    p.add_argument("--child", choices=["lora", "full", "lora_ckpt"], help=argparse.SUPPRESS)
    return p.parse_args()


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def peak_rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def live_tensor_peak_mb(fn):
    """Peak of live CPU tensor bytes while fn() runs, above what was live before it, from the
    profiler's allocation records (total_allocated counts only blocks allocated while profiling)."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    peak = 0

    def walk(nodes):
        nonlocal peak
        for n in nodes:
            if n.tag == _EventType.Allocation:
                peak = max(peak, n.extra_fields.total_allocated)
            walk(n.children)

    walk(prof.profiler.kineto_results.experimental_event_tree())
    return peak / (1024.0 * 1024.0)


def child(args):
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(args.threads)
    import peft
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    transformers.logging.set_verbosity_error()
    baseline = rss_mb()
    mode = args.child
    cfg = LlamaConfig(vocab_size=32000, hidden_size=288, intermediate_size=768, num_hidden_layers=6,
                      num_attention_heads=6, num_key_value_heads=6, max_position_embeddings=256,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, attention_bias=False,
                      hidden_act="silu", use_cache=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    model.train()
    if mode == "lora_ckpt":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if mode in ("lora", "lora_ckpt"):
        lc = peft.LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                             bias="none", task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lc)
    params = [p for p in model.parameters() if p.requires_grad]
    trainable = sum(p.numel() for p in params)
    opt = torch.optim.AdamW(params, lr=1e-4)
    tokens = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), dtype=torch.long)

    def step():
        opt.zero_grad()
        out = model(input_ids=tokens, labels=tokens)
        out.loss.backward()
        opt.step()

    step()  # warm-up
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            step()
        prof.export_chrome_trace(args.profile)
        print(json.dumps({"side": "reference", "bench": "llm", "mode": mode, "trace": args.profile}), flush=True)
        return
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - t0
    peak = peak_rss_mb()
    opt.zero_grad()
    step_mb = live_tensor_peak_mb(step)
    print(json.dumps({
        "side": "reference", "bench": "llm", "mode": mode,
        "impl": f"transformers {transformers.__version__} + peft {peft.__version__}", "torch": torch.__version__,
        "batch": args.batch, "seq": args.seq, "steps": args.steps, "threads": torch.get_num_threads(),
        "attn": model.config._attn_implementation if hasattr(model, "config") else "sdpa",
        "tokens_per_s": round(args.steps * args.batch * args.seq / seconds, 1),
        "peak_rss_mb": round(peak, 1), "baseline_rss_mb": round(baseline, 1),
        "peak_rss_above_baseline_mb": round(peak - baseline, 1), "step_tensor_mb": round(step_mb, 1),
        "trainable": trainable}), flush=True)


def main():
    args = parse_args()
    if args.child:
        child(args)
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               CUDA_VISIBLE_DEVICES="")
    failed = False
    for mode in ["lora"] if args.profile else args.modes:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--steps", str(args.steps),
               "--batch", str(args.batch), "--seq", str(args.seq), "--threads", str(args.threads)]
        if args.profile:
            cmd += ["--profile", os.path.abspath(args.profile)]
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
        if r.returncode != 0 or not lines:
            print(json.dumps({"side": "reference", "bench": "llm", "mode": mode, "error": f"exit {r.returncode}"}),
                  flush=True)
            failed = True
            continue
        print(lines[-1], flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
