// mixed_precision="bf16" on a CPU without bfloat16 instructions: the ISA read
// from /proc/cpuinfo's text, the warning for each kind of CPU, and the
// Accelerator saying it (ONEDNN_MAX_CPU_ISA stands in for an older CPU here).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <map>

#include "accel/accelerator.hpp"
#include "accel/model.hpp"
#include "precision/cpu_bf16.hpp"

namespace {

using accel::detail::bf16_emulation_warning;
using accel::detail::CpuBf16Isa;
using accel::detail::parse_cpuinfo;

const char* const kSapphireRapids =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    "flags\t\t: fpu sse avx avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile\n\n"
    "processor\t: 1\nmodel name\t: second\nflags\t\t: fpu\n";

TEST(CpuBf16, ReadsTheFirstProcessorsModelAndFlags) {
  const CpuBf16Isa isa = parse_cpuinfo(kSapphireRapids);
  EXPECT_EQ(isa.model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_TRUE(isa.avx2 && isa.avx512 && isa.avx512_bf16 && isa.amx_bf16);
  EXPECT_EQ(accel::detail::describe_isa(isa), "AVX2 AVX-512 AVX-512-BF16 AMX-BF16");
  EXPECT_EQ(accel::detail::describe_isa(parse_cpuinfo("")), "no AVX2");
}

TEST(CpuBf16, HardwareBf16IsQuietUnlessOneDnnIsCappedBelowIt) {
  CpuBf16Isa isa = parse_cpuinfo(kSapphireRapids);
  EXPECT_EQ(bf16_emulation_warning(isa), "");
  for (const char* cap : {"ALL", "AVX512_CORE_BF16", "AVX512_CORE_AMX", "AVX10_1_512_AMX"}) {
    isa.onednn_cap = cap;
    EXPECT_EQ(bf16_emulation_warning(isa), "") << cap;
  }
  isa.onednn_cap = "AVX512_CORE";
  const std::string warning = bf16_emulation_warning(isa);
  EXPECT_NE(warning.find("Intel(R) Xeon(R) Platinum 8480+ (AVX2 AVX-512 AVX-512-BF16 AMX-BF16) with "
                         "ONEDNN_MAX_CPU_ISA=AVX512_CORE keeps oneDNN off the CPU's bfloat16 instructions"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("slower than with mixed_precision \"no\""), std::string::npos) << warning;
}

TEST(CpuBf16, CpusWithoutBf16InstructionsAreWarnedWithWhatRuns) {
  const std::string zen3 =
      bf16_emulation_warning(parse_cpuinfo("model name\t: AMD EPYC 7763 64-Core Processor\nflags\t\t: avx avx2 fma\n"));
  EXPECT_NE(zen3.find("AMD EPYC 7763 64-Core Processor (AVX2) has no bfloat16 instructions"), std::string::npos)
      << zen3;
  EXPECT_NE(zen3.find("LibTorch's reference kernels"), std::string::npos) << zen3;
  const std::string skylake =
      bf16_emulation_warning(parse_cpuinfo("model name\t: Intel Skylake-SP\nflags\t\t: avx2 avx512f avx512bw\n"));
  EXPECT_NE(skylake.find("(AVX2 AVX-512) has no bfloat16 instructions"), std::string::npos) << skylake;
  EXPECT_NE(skylake.find("oneDNN emulates the bfloat16 products with AVX-512"), std::string::npos) << skylake;
}

// This machine's own ISA decides whether an uncapped run warns; capped to
// AVX512_CORE, every CPU (with or without bf16 instructions) gets a warning,
// one naming the cap: a text no other test's Accelerator has said in this process.
TEST(CpuBf16, TheAcceleratorWarnsOnceWhenBf16IsEmulated) {
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.mixed_precision = accel::MixedPrecision::Bf16;
  const bool machine_emulates = !bf16_emulation_warning(accel::detail::read_cpu_bf16_isa()).empty();
  ::setenv("ONEDNN_MAX_CPU_ISA", "avx512_core", 1);
  testing::internal::CaptureStderr();
  { accel::Accelerator first(options); }
  { accel::Accelerator second(options); }
  const std::string capped = testing::internal::GetCapturedStderr();
  ::unsetenv("ONEDNN_MAX_CPU_ISA");
  const std::string needle = "mixed precision \"bf16\" on the CPU";
  const size_t at = capped.find(needle);
  ASSERT_NE(at, std::string::npos) << capped;
  EXPECT_EQ(capped.find(needle, at + 1), std::string::npos) << "said twice: " << capped;
  EXPECT_NE(capped.find("WARNING accel: "), std::string::npos) << capped;
  EXPECT_NE(capped.find("with ONEDNN_MAX_CPU_ISA=AVX512_CORE"), std::string::npos) << capped;
  if (!machine_emulates) {
    testing::internal::CaptureStderr();
    { accel::Accelerator uncapped(options); }
    EXPECT_EQ(testing::internal::GetCapturedStderr().find(needle), std::string::npos);
  }
  options.mixed_precision = accel::MixedPrecision::No;  // fp32 never warns
  ::setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
  testing::internal::CaptureStderr();
  { accel::Accelerator fp32(options); }
  ::unsetenv("DNNL_MAX_CPU_ISA");
  EXPECT_EQ(testing::internal::GetCapturedStderr().find(needle), std::string::npos);
}

// mixed_precision="bf16" on the CPU: the products take bfloat16 inputs and
// accumulate in float32 (oneDNN's bf16 kernels, AMX or AVX-512-BF16 where the
// CPU has them). An MLP Linear(64, 256) -> GELU(erf) -> Linear(256, 8) checked
// against its exact value (float64 on the same parameters):
// - a product of K terms: its inputs (a, W, bias) are each rounded to bfloat16
//   (2^-8 relative), so the exact sum of rounded terms is within
//   (2 * 2^-8 + 2^-16) P of the true one, P = |a| |W|^T + |bias|; float32
//   accumulation adds K * 2^-24 P; the result is rounded to bfloat16 (2^-8
//   of |y| <= P): e1 <= (3 * 2^-8 + 2^-16 + K * 2^-24) P.
// - GELU passes an error on with slope <= 1.13 and rounds once more (its
//   float32 evaluation, 10 * 2^-24 |x|, is inside the margin): e_g <= 1.13 e1 + 2^-8 |g|.
// - the second product carries e_g through |W2| and adds its own rounding
//   term as the first: e2 <= |W2| e_g + (3 * 2^-8 + 2^-16 + K * 2^-24) P2.
// The bound is a worst case (every rounding the same way), so it catches a
// kernel or cast that loses more than bfloat16's rounding, not a quieter
// accumulation order; that the error is not zero shows bf16 ran at all.
TEST(CpuBf16, ProductsAccumulateInFloat32WithinBfloat16sRounding) {
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.mixed_precision = accel::MixedPrecision::Bf16;
  accel::Accelerator accelerator(options);
  accel::Model model = accel::Model::from_json(
      R"([{"type": "Linear", "in_features": 64, "out_features": 256}, {"type": "GELU"},
          {"type": "Linear", "in_features": 256, "out_features": 8}])");
  accelerator.prepare(model);
  at::manual_seed(11);
  const at::Tensor x = at::randn({32, 64});
  const at::Tensor y = model.forward(x).detach();
  std::map<std::string, at::Tensor> p;
  for (const auto& [name, tensor] : model.named_parameters()) p[name] = tensor.detach().to(at::kDouble);
  const at::Tensor x64 = x.to(at::kDouble);
  const at::Tensor h = at::addmm(p["0.bias"], x64, p["0.weight"].t());
  const at::Tensor g = at::gelu(h);
  const at::Tensor exact = at::addmm(p["2.bias"], g, p["2.weight"].t());
  auto rounding = [](int64_t k) { return 3 * 0x1p-8 + 0x1p-16 + k * 0x1p-24; };
  const at::Tensor e1 = rounding(64) * at::addmm(p["0.bias"].abs(), x64.abs(), p["0.weight"].abs().t());
  const at::Tensor eg = 1.13 * e1 + 0x1p-8 * g.abs();
  const at::Tensor e2 = at::mm(eg, p["2.weight"].abs().t()) +
                        rounding(256) * at::addmm(p["2.bias"].abs(), g.abs(), p["2.weight"].abs().t());
  const at::Tensor error = (y.to(at::kDouble) - exact).abs();
  const double share = (error / e2).max().item<double>();
  std::printf("bf16 MLP against exact: worst error %g, %.3g of the bound\n", error.max().item<double>(), share);
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_LE(share, 1.0);
  EXPECT_GT(error.max().item<double>(), 0.0) << "bf16 changed nothing: did autocast run?";
}

}  // namespace
