// Keeps glibc's malloc from handing a training step's large buffers back to
// the kernel after every step.
//
// glibc serves blocks above its mmap threshold with fresh mmap()s and trims
// the heap's top whenever more than its trim threshold lies free there. Its
// dynamic thresholds follow single frees, so a training step, which allocates
// and frees buffers of many sizes every step, keeps getting memory from the
// kernel anew: each page comes back zeroed by a page fault. On the example CNN
// that was about 1500 faults a step; tuned, it trains 1.3-1.55x faster
// (docs/benchmarks.md, "Data loader").
#pragma once

namespace accel::detail {

// Called by every Accelerator; acts once per process. Sets the mmap threshold
// to its largest value (32 MiB) and the trim threshold to 256 MiB, so that
// freed buffers up to 32 MiB are reused from the heap. Does nothing with a
// non-glibc C library, when ACCEL_TUNE_MALLOC is false (0, no, off, ...), or
// when the user chose any of MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or
// MALLOC_TOP_PAD_ (glibc reads those itself). Returns whether the thresholds
// were set by this process. Throws accel::Error (InvalidArgument) for an
// ACCEL_TUNE_MALLOC that is not a true/false word, every time it is called.
bool tune_host_allocator();

}  // namespace accel::detail
