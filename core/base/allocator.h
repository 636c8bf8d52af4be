#pragma once
// glibc returns every freed block above 128 KB to the kernel and maps it afresh on the next
// allocation, so each image canvas, batch buffer or 60 MB checkpoint pays page faults (on the
// virtual machines GPU servers often are, they cost up to a third of the CPU time). Raising the
// mmap and trim thresholds keeps those blocks in the heap for reuse. Process-wide, idempotent; a
// no-op on other C libraries.
namespace crucible {

void keep_large_blocks_in_heap();

}  // namespace crucible
