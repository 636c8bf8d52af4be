#!/usr/bin/env python3
"""LoRA (bf16 base) and QLoRA (NF4 base with double quantization) training steps of a 1B-class
Llama, Crucible beside PEFT on the same torch, from one run: tokens/s, the weights' bytes and
the peak resident size of each, and the ratios.

Peak RSS is counted above each process's size once its libraries are loaded (LibTorch with its
CUDA libraries; Python with torch, transformers, peft and bitsandbytes), before the model.
Crucible's side is build/tests/llm_lora/bench_qlora_step (one process per mode); PEFT's runs
here, one child process per mode, in the reference environment of setup_venv.sh (transformers,
peft, bitsandbytes on the CPU). Both sides build the same model the same way: TinyLlama-1.1B's
shapes (hidden 2048, MLP 5632, 22 layers, 32 heads, 4 KV heads, vocab 32000, untied head),
random bf16 weights made tensor by tensor, with QLoRA each projection quantized as soon as it
exists (PEFT: bitsandbytes' Linear4bit, nf4, double quantization, bf16 compute); LoRA r=16,
alpha=32, no dropout, on every projection; one warm-up step, then `steps` timed steps of
forward, loss, backward and AdamW (lr 1e-4) on the adapters; batch 1 x seq 256 random tokens.
The four runs go in turn (Crucible LoRA, PEFT LoRA, Crucible QLoRA, PEFT QLoRA), `--rounds`
times, and every figure is printed, so noise shows as a range.

  ~/.cache/crucible/reference-2.11.0/bin/python tests/bench/reference/qlora_compare.py \
      [--bench build/tests/llm_lora/bench_qlora_step] [--steps 2] [--seq 256] [--layers 22] \
      [--threads 2] [--rounds 1]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

from llm_reference import rss_mb  # this folder's LLM reference: the same RSS reading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default=os.path.join(ROOT, "build/tests/llm_lora/bench_qlora_step"))
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--layers", type=int, default=22)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--child", choices=["lora", "qlora"], help=argparse.SUPPRESS)
    return p.parse_args()


SHAPES = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
              num_attention_heads=32, num_key_value_heads=4)
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def child(args):
    import torch
    import bitsandbytes as bnb
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    baseline_mb = rss_mb()  # torch, transformers, peft and bitsandbytes imported
    config = LlamaConfig(**SHAPES, num_hidden_layers=args.layers, max_position_embeddings=2048,
                         rms_norm_eps=1e-5, tie_word_embeddings=False)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    qlora = args.child == "qlora"
    with torch.no_grad():
        for name, module in list(model.named_modules()):
            leaf = name.split(".")[-1]
            if isinstance(module, torch.nn.Linear):
                w = (torch.randn(module.out_features, module.in_features, dtype=torch.bfloat16)
                     / module.in_features ** 0.5)
                if qlora and leaf in TARGETS:
                    q = bnb.nn.Linear4bit(module.in_features, module.out_features, bias=False,
                                          compute_dtype=torch.bfloat16, compress_statistics=True,
                                          quant_type="nf4", device="cpu")
                    q.weight = bnb.nn.Params4bit(w, requires_grad=False, compress_statistics=True,
                                                 quant_type="nf4", blocksize=64)
                    q = q.to("cpu")  # quantizes now: the dense weight is dropped
                    parent = model.get_submodule(name.rsplit(".", 1)[0])
                    setattr(parent, leaf, q)
                else:
                    module.weight = torch.nn.Parameter(w, requires_grad=False)
            elif isinstance(module, torch.nn.Embedding):
                module.weight = torch.nn.Parameter(
                    torch.randn(module.num_embeddings, module.embedding_dim,
                                dtype=torch.bfloat16), requires_grad=False)
            elif hasattr(module, "weight") and isinstance(getattr(module, "weight"),
                                                          torch.nn.Parameter):
                module.weight = torch.nn.Parameter(torch.ones(module.weight.shape,
                                                              dtype=torch.bfloat16))
        # The rotary buffers were made on the meta device: made again on the CPU.
        for module in model.modules():
            if hasattr(module, "inv_freq") and module.inv_freq.is_meta:
                with torch.device("cpu"):
                    rope = type(module)(config)
                for buffer, value in rope.named_buffers():
                    module.register_buffer(buffer, value, persistent=False)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    spec = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=TARGETS, bias="none",
                      task_type="CAUSAL_LM")
    model = get_peft_model(model, spec)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:  # adapters in fp32 over a bf16 base, as Crucible keeps them
        p.data = p.data.float()
    opt = torch.optim.AdamW(params, lr=1e-4)
    tokens = torch.randint(0, SHAPES["vocab_size"], (args.batch, args.seq))

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        opt.step()

    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - t0
    print("RESULT " + json.dumps({
        "side": "peft", "mode": args.child,
        "tokens_s": args.steps * args.batch * args.seq / seconds,
        "weights_mb": weights / 2**20,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 - baseline_mb,
        "trainable": sum(p.numel() for p in params)}), flush=True)


def result_of(command):
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    sys.exit(f"no RESULT from {' '.join(command)} (exit {out.returncode}):\n{out.stdout[-3000:]}")


def main():
    args = parse_args()
    if args.child:
        child(args)
        return
    common = [f"--steps={args.steps}", f"--batch={args.batch}", f"--seq={args.seq}",
              f"--layers={args.layers}", f"--threads={args.threads}"]
    ours = [args.bench, f"steps={args.steps}", f"batch={args.batch}", f"seq={args.seq}",
            f"layers={args.layers}", f"threads={args.threads}"]
    runs = {}
    for r in range(args.rounds):
        for mode in ("lora", "qlora"):
            for side, command in (("crucible", ours + [f"mode={mode}"]),
                                  ("peft", [sys.executable, __file__, "--child", mode] + common)):
                res = result_of(command)
                runs.setdefault((side, mode), []).append(res)
                print(f"round {r + 1}: {side:8} {mode:5} {res['tokens_s']:7.1f} tokens/s  "
                      f"weights {res['weights_mb']:7.1f} MB  peak RSS +{res['peak_mb']:7.1f} MB",
                      flush=True)

    def span(side, mode, key):
        values = [x[key] for x in runs[(side, mode)]]
        return min(values), max(values)

    def fmt(lo, hi, unit=""):
        return f"{lo:.1f}{unit}" if abs(hi - lo) < 0.05 else f"{lo:.1f}-{hi:.1f}{unit}"

    print(f"\n1B-class Llama ({args.layers} layers), batch {args.batch} x seq {args.seq}, "
          f"{args.steps} timed steps, {args.threads} threads, {args.rounds} round(s)")
    print(f"{'':18}{'tokens/s':>14}{'weights MB':>14}{'peak RSS MB':>16}")
    for side in ("crucible", "peft"):
        for mode in ("lora", "qlora"):
            print(f"{side + ' ' + mode:18}{fmt(*span(side, mode, 'tokens_s')):>14}"
                  f"{fmt(*span(side, mode, 'weights_mb')):>14}"
                  f"{fmt(*span(side, mode, 'peak_mb')):>16}")
    mean = lambda side, mode, key: sum(span(side, mode, key)) / 2
    for mode in ("lora", "qlora"):
        print(f"{mode}: Crucible / PEFT speed x{mean('crucible', mode, 'tokens_s') / mean('peft', mode, 'tokens_s'):.2f}, "
              f"peak RSS x{mean('crucible', mode, 'peak_mb') / mean('peft', mode, 'peak_mb'):.2f}")
    for side in ("crucible", "peft"):
        print(f"{side}: QLoRA weights / LoRA weights "
              f"{100 * mean(side, 'qlora', 'weights_mb') / mean(side, 'lora', 'weights_mb'):.0f} %, "
              f"peak RSS {100 * mean(side, 'qlora', 'peak_mb') / mean(side, 'lora', 'peak_mb'):.0f} %, "
              f"speed x{mean(side, 'qlora', 'tokens_s') / mean(side, 'lora', 'tokens_s'):.2f}")


if __name__ == "__main__":
    main()
