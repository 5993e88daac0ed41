// Whether this CPU multiplies bfloat16 in hardware. mixed_precision="bf16" on a
// CPU without AVX-512-BF16 or AMX-BF16 still runs, but its matrix products are
// emulated in float32 arithmetic and run slower than fp32: the Accelerator
// warns instead of letting that pass silently.
#pragma once

#include <string>

namespace accel::detail {

struct CpuBf16Isa {
  std::string model;    // /proc/cpuinfo's "model name"
  bool avx2 = false;    // the /proc/cpuinfo flags that decide which kernels run
  bool avx512 = false;  // avx512f
  bool avx512_bf16 = false;
  bool amx_bf16 = false;
  std::string onednn_cap;  // ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA), upper-cased; empty when unset
};

// The first processor's model and flags in `cpuinfo` (the text of /proc/cpuinfo).
CpuBf16Isa parse_cpuinfo(const std::string& cpuinfo);

// This machine's: /proc/cpuinfo (all false where it cannot be read) and the environment.
CpuBf16Isa read_cpu_bf16_isa();

// "AVX2 AVX-512 AVX-512-BF16 AMX-BF16", the present ones; "no AVX2" when none.
std::string describe_isa(const CpuBf16Isa& isa);

// Empty when bf16 products run in hardware; otherwise the warning for
// mixed_precision="bf16": the CPU, its ISA (and oneDNN's cap when set), what
// runs instead and why.
std::string bf16_emulation_warning(const CpuBf16Isa& isa);

}  // namespace accel::detail
