#include "matmul/onednn_matmul.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#if defined(ACCEL_WITH_ONEDNN)
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "matmul/onednn_runtime.hpp"
#endif

namespace accel::detail::onednn {

#if defined(ACCEL_WITH_ONEDNN)

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

namespace {

using Dims = dnnl::memory::dims;

// A primitive is planned for one set of shapes, strides and thread count
// (oneDNN splits the work by the threads it sees at creation); the few a
// model uses are kept, so planning happens once per shape.
using PlanKey = std::tuple<Dims, Dims, Dims, Dims, c10::ScalarType, std::optional<c10::ScalarType>, int>;

struct Plan {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, bias, out, scratchpad;
};

Dims dims_of(const at::Tensor& t) { return Dims(t.sizes().begin(), t.sizes().end()); }
Dims strides_of(const at::Tensor& t) { return Dims(t.strides().begin(), t.strides().end()); }

dnnl::memory::data_type data_type_of(c10::ScalarType type) {
  return type == at::kBFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

// oneDNN's reference implementations are plain loops, far slower than ATen's
// products: a layout or dtype that only they take (bfloat16 on a CPU without
// AVX-512, say) is left to ATen.
bool is_reference(const dnnl::matmul::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// Variable-length batches bring a new shape per sequence length, so the plans
// are bounded: the least recently used goes beyond this many (oneDNN's own
// primitive cache then makes re-planning it cheap).
constexpr size_t kMaxPlans = 512;

struct Plans {
  std::mutex mutex;
  std::list<PlanKey> recency;  // most recent first
  std::map<PlanKey, std::pair<std::optional<Plan>, std::list<PlanKey>::iterator>> by_key;
};

// The returned plan stays valid while the caller holds `lock`.
const Plan* plan_for(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias, const at::Tensor& out,
                     std::unique_lock<std::mutex>& lock) {
  static Plans plans;
  const bool with_bias = bias.defined();
  const std::optional<c10::ScalarType> bias_type =
      with_bias ? std::optional<c10::ScalarType>(bias.scalar_type()) : std::nullopt;
  PlanKey key{dims_of(a), strides_of(a), dims_of(b), strides_of(b), a.scalar_type(), bias_type, at::get_num_threads()};
  lock = std::unique_lock<std::mutex>(plans.mutex);
  auto it = plans.by_key.find(key);
  if (it != plans.by_key.end()) {
    plans.recency.splice(plans.recency.begin(), plans.recency, it->second.second);
  } else {
    std::optional<Plan> plan;
    try {
      const auto type = data_type_of(a.scalar_type());
      dnnl::memory::desc a_desc(dims_of(a), type, strides_of(a)), b_desc(dims_of(b), type, strides_of(b));
      dnnl::memory::desc out_desc(dims_of(out), type, strides_of(out));
      dnnl::memory::desc bias_desc;
      if (with_bias) {
        Dims bias_dims(out.dim(), 1);
        bias_dims.back() = out.size(-1);
        Dims bias_strides(out.dim(), out.size(-1));
        bias_strides.back() = 1;
        bias_desc = dnnl::memory::desc(bias_dims, data_type_of(*bias_type), bias_strides);
      }
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per call: concurrent calls stay apart
      auto desc = with_bias ? dnnl::matmul::desc(a_desc, b_desc, bias_desc, out_desc)
                            : dnnl::matmul::desc(a_desc, b_desc, out_desc);
      dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
      if (!is_reference(pd)) plan = Plan{dnnl::matmul(pd), a_desc, b_desc, bias_desc, out_desc, pd.scratchpad_desc()};
    } catch (const dnnl::error&) {
      plan.reset();  // a layout oneDNN does not take: ATen computes it, every time
    }
    if (plans.by_key.size() >= kMaxPlans) {
      plans.by_key.erase(plans.recency.back());
      plans.recency.pop_back();
    }
    plans.recency.push_front(key);
    it = plans.by_key.emplace(std::move(key), std::make_pair(std::move(plan), plans.recency.begin())).first;
  }
  return it->second.first ? &*it->second.first : nullptr;
}

bool positive_strides(const at::Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) <= 0) return false;
  }
  return true;
}

bool fits(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16) &&
         t.layout() == at::kStrided && !t.is_conj() && !t.is_neg() && t.numel() > 0 && positive_strides(t);
}

}  // namespace

bool available() { return true; }

std::optional<at::Tensor> matmul(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias) {
  if (!fits(a) || !fits(b) || a.scalar_type() != b.scalar_type() || a.dim() < 2 || a.dim() != b.dim() || a.dim() > 6) {
    return std::nullopt;
  }
  const int64_t n = a.dim();
  if (a.size(n - 1) != b.size(n - 2) || a.sizes().slice(0, n - 2) != b.sizes().slice(0, n - 2)) return std::nullopt;
  const bool with_bias = bias.defined();
  if (with_bias && (!fits(bias) || bias.dim() != 1 || bias.size(0) != b.size(n - 1) || !bias.is_contiguous())) {
    return std::nullopt;
  }
  std::vector<int64_t> out_sizes(a.sizes().begin(), a.sizes().end());
  out_sizes.back() = b.size(n - 1);
  at::Tensor out = at::empty(out_sizes, a.options());
  std::unique_lock<std::mutex> lock;
  const Plan* found = plan_for(a, b, bias, out, lock);
  if (found == nullptr) return std::nullopt;
  // A copy (primitives are reference-counted handles), so the lock is not held while it runs.
  const Plan plan_copy = *found;
  lock.unlock();
  const Plan* plan = &plan_copy;
  dnnl::engine& engine = cpu_engine();
  dnnl::stream& stream = cpu_stream();
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(plan->a, engine, a.data_ptr())},
                                             {DNNL_ARG_WEIGHTS, dnnl::memory(plan->b, engine, b.data_ptr())},
                                             {DNNL_ARG_DST, dnnl::memory(plan->out, engine, out.data_ptr())}};
  at::Tensor scratch;
  if (const auto bytes = static_cast<int64_t>(plan->scratchpad.get_size()); bytes > 0) {
    scratch = at::empty({bytes}, a.options().dtype(at::kByte));
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(plan->scratchpad, engine, scratch.data_ptr()));
  }
  if (with_bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(plan->bias, engine, bias.data_ptr()));
  plan->primitive.execute(stream, args);
  stream.wait();
  return out;
}

#else

bool available() { return false; }

std::optional<at::Tensor> matmul(const at::Tensor&, const at::Tensor&, const at::Tensor&) { return std::nullopt; }

#endif

}  // namespace accel::detail::onednn
