#pragma once
// How the C library hands freed memory back to the system during training.
//
// A training step allocates and frees the same large activation and gradient buffers (tens of
// MB each at batch 16) every step. glibc's defaults return them to the kernel (blocks over its
// mmap threshold are unmapped on free; the heap top is trimmed), so every step page-faults them
// in again, zero-filled: 2.4 million faults in a 2-epoch bench_train_detect run (yolov8n, 320 px,
// batch 16, 2 threads) and more than half of its step (1.09-1.28 s -> 0.46-0.50 s, measured).
// Keeping freed memory in the process costs nothing the step does not use again; the process
// keeps its peak footprint until it exits (a training, validation or prediction process; the
// studio never calls this).
namespace crucible::engine {

// On glibc: no block is mapped on its own, and the heap is never trimmed. Lowering the mmap
// threshold is not enough: glibc caps it at 32 MiB, below the 100 MiB maps of a 640 px batch
// (12,400 faults a forward + backward there and a 640 px step 2-9% slower, bench_yolo_step,
// measured). Once per process; a no-op elsewhere. Returns whether it changed anything.
bool keep_freed_memory_for_reuse();

}  // namespace crucible::engine
