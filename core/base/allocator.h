#pragma once
// The one owner of the C library's malloc settings. The rule: a process that computes (training,
// validation, prediction, the data loaders that feed them; crucible-worker, `crucible
// train|val|predict`, the benchmarks) keeps the memory it frees for reuse and never hands it back
// to the system before it exits. The studio and the agent never call this: they keep glibc's
// defaults. Nothing else in the product calls mallopt (bench_sd_lora sets its Python reference's
// thresholds on purpose, to compare like with like).
//
// Why. A training step allocates and frees the same large activation and gradient buffers (tens
// of MB each at batch 16) every step, and the loader the same image canvases and batch buffers
// every batch. glibc's defaults return them to the kernel (blocks over its mmap threshold, 128 KB
// at first, are unmapped on free; the heap top is trimmed), so every step page-faults them in
// again, zero-filled: 2.4 million faults in a 2-epoch bench_train_detect run (yolov8n, 320 px,
// batch 16, 2 threads) and more than half of its step (1.09-1.28 s -> 0.46-0.50 s, measured). On
// the virtual machines GPU servers often are, page faults cost up to a third of the loader's CPU
// time with 2 threads. Keeping freed memory in the process costs nothing the next step does not
// use again; the process keeps its peak footprint until it exits.
namespace crucible {

// On glibc: no block is mapped on its own (M_MMAP_MAX 0), and the heap is never trimmed
// (M_TRIM_THRESHOLD at its maximum). Raising the mmap threshold instead is not enough: glibc caps
// it at 32 MiB, below the 100 MiB maps of a 640 px batch (12,400 faults a forward + backward there
// and a 640 px step 2-9% slower, bench_yolo_step, measured). Applied once per process, whoever
// calls first; later calls change nothing. A no-op on other C libraries. Returns whether the
// settings are in force.
bool keep_freed_memory_for_reuse();

}  // namespace crucible
