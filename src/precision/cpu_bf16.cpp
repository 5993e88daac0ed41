#include "precision/cpu_bf16.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace accel::detail {
namespace {

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

// oneDNN's ISA caps that still reach bfloat16 instructions: AVX512_CORE_BF16,
// AVX512_CORE_FP16 and the AMX ones, AVX10_*, AVX2_VNNI_2 (bf16 conversions), ALL.
bool cap_allows_bf16(const std::string& cap) {
  if (cap.empty() || cap == "ALL" || cap == "DEFAULT") return true;
  for (const char* family : {"BF16", "FP16", "AMX", "AVX10", "AVX2_VNNI_2"})
    if (cap.find(family) != std::string::npos) return true;
  return false;
}

}  // namespace

CpuBf16Isa parse_cpuinfo(const std::string& cpuinfo) {
  CpuBf16Isa isa;
  std::istringstream lines(cpuinfo);
  bool have_model = false, have_flags = false;
  for (std::string line; std::getline(lines, line) && !(have_model && have_flags);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && !have_model) {
      isa.model = value, have_model = true;
    } else if (key == "flags" && !have_flags) {
      std::istringstream words(value);
      const std::set<std::string> flags{std::istream_iterator<std::string>(words), {}};
      isa.avx2 = flags.count("avx2") > 0;
      isa.avx512 = flags.count("avx512f") > 0;
      isa.avx512_bf16 = flags.count("avx512_bf16") > 0;
      isa.amx_bf16 = flags.count("amx_bf16") > 0;
      have_flags = true;
    }
  }
  return isa;
}

CpuBf16Isa read_cpu_bf16_isa() {
  std::ifstream in("/proc/cpuinfo");
  CpuBf16Isa isa = parse_cpuinfo(std::string(std::istreambuf_iterator<char>(in), {}));
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap == nullptr || *cap == '\0') cap = std::getenv("DNNL_MAX_CPU_ISA");
  if (cap != nullptr) {
    isa.onednn_cap = cap;
    std::transform(isa.onednn_cap.begin(), isa.onednn_cap.end(), isa.onednn_cap.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  return isa;
}

std::string describe_isa(const CpuBf16Isa& isa) {
  std::string out;
  const std::pair<bool, const char*> names[] = {
      {isa.avx2, "AVX2"}, {isa.avx512, "AVX-512"}, {isa.avx512_bf16, "AVX-512-BF16"}, {isa.amx_bf16, "AMX-BF16"}};
  for (const auto& [present, name] : names)
    if (present) out += (out.empty() ? "" : " ") + std::string(name);
  return out.empty() ? "no AVX2" : out;
}

std::string bf16_emulation_warning(const CpuBf16Isa& isa) {
  const bool hardware = isa.avx512_bf16 || isa.amx_bf16;
  if (hardware && cap_allows_bf16(isa.onednn_cap)) return "";
  // The cap is named whenever it is set, so a capped run's warning is its own text.
  const std::string cpu = (isa.model.empty() ? "this CPU" : isa.model) + " (" + describe_isa(isa) + ")" +
                          (isa.onednn_cap.empty() ? "" : " with ONEDNN_MAX_CPU_ISA=" + isa.onednn_cap);
  std::string why, what;
  if (hardware) {
    why = cpu + " keeps oneDNN off the CPU's bfloat16 instructions";
    what = "oneDNN emulates the bfloat16 products";
  } else if (isa.avx512) {
    why = cpu + " has no bfloat16 instructions (AVX-512-BF16 or AMX-BF16)";
    what = "oneDNN emulates the bfloat16 products with AVX-512";
  } else {
    why = cpu + " has no bfloat16 instructions (AVX-512-BF16 or AMX-BF16)";
    what = "LibTorch's reference kernels compute the bfloat16 products";
  }
  return "mixed precision \"bf16\" on the CPU: " + why + ", so " + what +
         " in float32 arithmetic, with a conversion at every product: expect training slower than with "
         "mixed_precision \"no\" (bf16 still halves the activations' memory)";
}

}  // namespace accel::detail
