#include "eltwise/masked_softmax_kernel.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace accel::detail::masked_softmax {

namespace {

// GCC's vector extensions: one zmm register per Floats under AVX-512, two
// ymm under AVX2, four xmm on baseline x86-64, from the same source.
constexpr int64_t kLanes = 16;
typedef float Floats __attribute__((vector_size(64)));
typedef int32_t Ints __attribute__((vector_size(64)));
typedef uint32_t Words __attribute__((vector_size(64)));
typedef uint16_t Halves __attribute__((vector_size(32)));
typedef uint8_t Bytes __attribute__((vector_size(16)));

#define ACCEL_INLINE inline __attribute__((always_inline))

ACCEL_INLINE Floats splat(float value) { return Floats{} + value; }

// The first `count` lanes (all 16, or a row's last few).
ACCEL_INLINE Ints lanes_below(int64_t count) {
  const Ints lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  return lane < static_cast<int32_t>(count);
}

// `count` elements from p, zero past them (a row's tail reads no further).
// A whole vector is one fixed-size copy, which compiles to one unaligned
// load; only a tail pays for a copy of run-time length.
template <class Vector, class T>
ACCEL_INLINE Vector load(const T* p, int64_t count) {
  Vector v{};
  if (count == kLanes) {
    std::memcpy(&v, p, sizeof v);
  } else {
    std::memcpy(&v, p, static_cast<size_t>(count) * sizeof(T));
  }
  return v;
}

template <class T, class Vector>
ACCEL_INLINE void store(T* p, Vector v, int64_t count) {
  if (count == kLanes) {
    std::memcpy(p, &v, sizeof v);
  } else {
    std::memcpy(p, &v, static_cast<size_t>(count) * sizeof(T));
  }
}

ACCEL_INLINE Floats from_bfloat16(Halves bits) { return (Floats)(__builtin_convertvector(bits, Words) << 16); }

// Rounded to the nearest bfloat16, ties to even, as c10::BFloat16 rounds (NaN stays NaN).
ACCEL_INLINE Floats round_to_bfloat16(Floats f) {
  const Words bits = (Words)f;
  const Words rounded = (bits + (((bits >> 16) & 1u) + 0x7FFFu)) & 0xFFFF0000u;
  return f != f ? f : (Floats)rounded;
}

ACCEL_INLINE Halves to_bfloat16_bits(Floats rounded) { return __builtin_convertvector((Words)rounded >> 16, Halves); }

// e^x, within about 2 float32 ulps: x = k ln 2 + r with |r| <= ln 2 / 2 (ln 2
// in two parts, so k ln 2 is exact enough), e^r by Cephes' degree-7 expansion
// (1 + r + r^2 p(r)), times 2^k built in the exponent bits. Below -87.34
// (under float's smallest normal) 0, as a softmax's masked terms must be;
// NaN stays NaN.
ACCEL_INLINE Floats exp_of(Floats x) {
  const Ints underflow = x < -87.336544f;
  x = x > 88.376266f ? splat(88.376266f) : x;
  x = underflow ? splat(0.0f) : x;
  const Floats scaled = x * 1.44269504088896341f + 0.5f;
  Ints k = __builtin_convertvector(scaled, Ints);  // toward zero: floor below
  k = __builtin_convertvector(k, Floats) > scaled ? k - 1 : k;
  const Floats kf = __builtin_convertvector(k, Floats);
  const Floats r = x - kf * 0.693359375f - kf * -2.12194440e-4f;
  Floats p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const Floats e = p * r * r + r + 1.0f;
  const Floats two_to_k = (Floats)((Words)(k + 127) << 23);
  return underflow ? splat(0.0f) : e * two_to_k;
}

ACCEL_INLINE float sum_of(Floats v) {
  float total = 0;
  for (int i = 0; i < kLanes; ++i) total += v[i];
  return total;
}

ACCEL_INLINE float max_of(Floats v) {
  float best = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < kLanes; ++i) best = v[i] > best ? v[i] : best;
  return best;
}

struct RowPointers {
  const void* scores;
  const bool* causal;
  const float* additive;
};

ACCEL_INLINE RowPointers row_pointers(const Rows& p, int64_t row) {
  const int64_t t = row % p.queries, h = row / p.queries % p.heads, b = row / (p.queries * p.heads);
  const int64_t element = row * p.length;
  RowPointers out;
  out.scores = p.bfloat16 ? static_cast<const void*>(static_cast<const uint16_t*>(p.scores) + element)
                          : static_cast<const void*>(static_cast<const float*>(p.scores) + element);
  out.causal = p.causal == nullptr
                   ? nullptr
                   : p.causal + b * p.causal_stride[0] + h * p.causal_stride[1] + t * p.causal_stride[2];
  out.additive = p.additive == nullptr
                     ? nullptr
                     : p.additive + b * p.additive_stride[0] + h * p.additive_stride[1] + t * p.additive_stride[2];
  return out;
}

// The scores scaled as the chain scales them: divided by the factor
// (GPT-2), or multiplied (kMultiply: Llama).
template <bool kMultiply>
ACCEL_INLINE Floats scaled(Floats x, float factor) {
  if constexpr (kMultiply) {
    return x * factor;
  } else {
    return x / splat(factor);
  }
}

ACCEL_INLINE Ints kept(const bool* causal, int64_t j, int64_t count) {
  return __builtin_convertvector(load<Bytes>(reinterpret_cast<const uint8_t*>(causal) + j, count), Ints) != 0;
}

// where(causal, scaled(scores).to(float32), mask_value) + additive for 16 (or
// count) elements from j (no where without kCausal): the chain's values
// before its softmax, bit for bit (the scaled scores rounded to bfloat16
// first when the scores are bfloat16).
template <bool kBfloat16, bool kCausal, bool kMultiply, bool kAdditive>
ACCEL_INLINE Floats logits(const Rows& p, const RowPointers& row, int64_t j, int64_t count) {
  Floats v;
  if constexpr (kBfloat16) {
    v = round_to_bfloat16(
        scaled<kMultiply>(from_bfloat16(load<Halves>(static_cast<const uint16_t*>(row.scores) + j, count)), p.factor));
  } else {
    v = scaled<kMultiply>(load<Floats>(static_cast<const float*>(row.scores) + j, count), p.factor);
  }
  if constexpr (kCausal) v = kept(row.causal, j, count) ? v : splat(p.mask_value);
  if constexpr (kAdditive) v = v + load<Floats>(row.additive + j, count);
  return v;
}

// Three passes over the row, as ATen's softmax makes: the logits and their
// maximum (kept in y), e^(v - max) and its sum, the scaling by 1 / sum.
template <bool kBfloat16, bool kCausal, bool kMultiply, bool kAdditive>
ACCEL_INLINE void forward_row(const Rows& p, const RowPointers& row, float* y) {
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  Floats best = splat(minus_infinity);
  for (int64_t j = 0; j < p.length; j += kLanes) {
    const int64_t count = std::min(kLanes, p.length - j);
    Floats v = logits<kBfloat16, kCausal, kMultiply, kAdditive>(p, row, j, count);
    if (count < kLanes) v = lanes_below(count) ? v : splat(minus_infinity);
    best = v > best ? v : best;
    store(y + j, v, count);
  }
  const float max = max_of(best);
  Floats total{};
  for (int64_t j = 0; j < p.length; j += kLanes) {
    const int64_t count = std::min(kLanes, p.length - j);
    Floats e = exp_of(load<Floats>(y + j, count) - max);
    if (count < kLanes) e = lanes_below(count) ? e : splat(0.0f);
    total += e;
    store(y + j, e, count);
  }
  const float scale = 1.0f / sum_of(total);
  for (int64_t j = 0; j < p.length; j += kLanes) {
    const int64_t count = std::min(kLanes, p.length - j);
    store(y + j, load<Floats>(y + j, count) * scale, count);
  }
}

// causal ? y (dy - sum(dy y)) : 0, scaled: the softmax's backward, the
// where's (zero where masked), the cast's (to bfloat16) and the scaling's.
template <bool kBfloat16, bool kCausal, bool kMultiply>
ACCEL_INLINE void backward_row(const Rows& p, const RowPointers& row, const float* dy, const float* y, void* grad) {
  Floats products{};
  for (int64_t j = 0; j < p.length; j += kLanes) {
    const int64_t count = std::min(kLanes, p.length - j);
    products += load<Floats>(dy + j, count) * load<Floats>(y + j, count);  // zero past the row
  }
  const float dot = sum_of(products);
  for (int64_t j = 0; j < p.length; j += kLanes) {
    const int64_t count = std::min(kLanes, p.length - j);
    Floats d = load<Floats>(y + j, count) * (load<Floats>(dy + j, count) - dot);
    if constexpr (kCausal) d = kept(row.causal, j, count) ? d : splat(0.0f);
    if constexpr (kBfloat16) {
      const Floats q = round_to_bfloat16(scaled<kMultiply>(round_to_bfloat16(d), p.factor));
      store(static_cast<uint16_t*>(grad) + j, to_bfloat16_bits(q), count);
    } else {
      store(static_cast<float*>(grad) + j, scaled<kMultiply>(d, p.factor), count);
    }
  }
}

template <bool kBfloat16, bool kCausal, bool kMultiply, bool kAdditive>
ACCEL_INLINE void forward_rows(const Rows& p, float* y, int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    forward_row<kBfloat16, kCausal, kMultiply, kAdditive>(p, row_pointers(p, row), y + row * p.length);
  }
}

// The forms the rewrites produce: GPT-2's (a causal mask, a division, with or
// without the padding mask) and Llama's (a product, one additive mask).
template <bool kBfloat16>
ACCEL_INLINE void forward_form(const Rows& p, float* y, int64_t begin, int64_t end) {
  if (p.multiply) {
    forward_rows<kBfloat16, false, true, true>(p, y, begin, end);
  } else if (p.additive != nullptr) {
    forward_rows<kBfloat16, true, false, true>(p, y, begin, end);
  } else {
    forward_rows<kBfloat16, true, false, false>(p, y, begin, end);
  }
}

template <bool kBfloat16, bool kCausal, bool kMultiply>
ACCEL_INLINE void backward_rows(const Rows& p, const float* dy, const float* y, void* grad, int64_t begin,
                                int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    const int64_t element = row * p.length;
    void* out = kBfloat16 ? static_cast<void*>(static_cast<uint16_t*>(grad) + element)
                          : static_cast<void*>(static_cast<float*>(grad) + element);
    backward_row<kBfloat16, kCausal, kMultiply>(p, row_pointers(p, row), dy + element, y + element, out);
  }
}

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void forward(const Rows& p, float* y, int64_t begin,
                                                                          int64_t end) {
  p.bfloat16 ? forward_form<true>(p, y, begin, end) : forward_form<false>(p, y, begin, end);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void backward(const Rows& p, const float* dy,
                                                                           const float* y, void* grad, int64_t begin,
                                                                           int64_t end) {
  if (p.multiply) {
    p.bfloat16 ? backward_rows<true, false, true>(p, dy, y, grad, begin, end)
               : backward_rows<false, false, true>(p, dy, y, grad, begin, end);
  } else {
    p.bfloat16 ? backward_rows<true, true, false>(p, dy, y, grad, begin, end)
               : backward_rows<false, true, false>(p, dy, y, grad, begin, end);
  }
}

}  // namespace accel::detail::masked_softmax
