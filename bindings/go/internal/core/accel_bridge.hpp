// C++ glue between the C ABI and the SWIG-generated bindings: the error
// exception every wrapper throws, and the classes host languages subclass
// (SWIG directors) for callbacks. It uses only accel.h, never libaccel's C++
// API, so the bindings stay on the stable ABI.
//
// Callback classes report failure by returning an error message ("" = OK)
// rather than throwing: a Go panic cannot cross C++ frames, and a returned
// message works the same way in every language. Each language's adapter
// catches its own exceptions and returns their text.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "accel/accel.h"

// A failed accel_* call: the status and the C layer's message.
class AccelFailure : public std::runtime_error {
 public:
  AccelFailure(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

inline void accel_check(accel_status status) {
  if (status != ACCEL_OK) throw AccelFailure(status, accel_last_error());
}
inline void accel_fail(accel_status status, const std::string& message) { throw AccelFailure(status, message); }

// One field of a sample a host-language dataset produces.
struct FieldSpec {
  accel_dtype dtype = ACCEL_FLOAT32;
  std::vector<int64_t> shape;  // per sample; empty for a scalar
};

// Where a dataset callback writes one sample: field f takes exactly
// nbytes(f) bytes (its dtype and shape), copied in by write().
class SampleWriter {
 public:
  SampleWriter(void* const* fields, const size_t* nbytes, int count)
      : fields_(fields), nbytes_(nbytes), count_(count) {}
  int num_fields() const { return count_; }
  size_t nbytes(int field) const { return nbytes_[checked(field)]; }
  void write(int field, const void* data, size_t size) {
    size_t expected = nbytes_[checked(field)];
    if (size != expected) {
      accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "field " + std::to_string(field) + " takes " + std::to_string(expected) +
                                                 " bytes, got " + std::to_string(size));
    }
    std::memcpy(fields_[field], data, size);
  }
  // For streams: there is no next sample.
  void end_of_stream() { ended_ = true; }
  bool ended() const { return ended_; }

 private:
  int checked(int field) const {
    if (field < 0 || field >= count_) {
      accel_fail(ACCEL_ERR_INVALID_ARGUMENT,
                 "field index " + std::to_string(field) + " out of range [0, " + std::to_string(count_) + ")");
    }
    return field;
  }
  void* const* fields_;
  const size_t* nbytes_;
  int count_;
  bool ended_ = false;
};

// A map-style dataset written in the host language.
class DatasetSource {
 public:
  virtual ~DatasetSource() {}
  virtual std::string get_sample(int64_t index, SampleWriter* out) = 0;
};

// An iterable dataset written in the host language.
class StreamSource {
 public:
  virtual ~StreamSource() {}
  // Writes the next sample, or calls out->end_of_stream().
  virtual std::string next_sample(SampleWriter* out) = 0;
  virtual std::string reset(uint64_t epoch) { return ""; }
};

// Where a collate function writes its batch: one tensor per field name, in
// the order the names were given, copied in by write().
class CollateWriter {
 public:
  CollateWriter(accel_tensor** fields, size_t count) : fields_(fields), count_(count) {}
  int num_fields() const { return static_cast<int>(count_); }
  void write(int field, accel_dtype dtype, const std::vector<int64_t>& shape, const void* data, size_t size) {
    if (field < 0 || static_cast<size_t>(field) >= count_) {
      accel_fail(ACCEL_ERR_INVALID_ARGUMENT,
                 "field index " + std::to_string(field) + " out of range [0, " + std::to_string(count_) + ")");
    }
    accel_tensor* tensor = nullptr;
    accel_check(accel_tensor_from_buffer(data, size, dtype, shape.data(), shape.size(), &tensor));
    accel_tensor_free(fields_[field]);
    fields_[field] = tensor;
  }
  // Copies a tensor the host language built (any dtype and shape) into the field.
  void write_tensor(int field, const accel_tensor* tensor) {
    if (tensor == nullptr)
      accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "field " + std::to_string(field) + ": the tensor is null");
    size_t ndim = 0;
    accel_check(accel_tensor_ndim(tensor, &ndim));
    std::vector<int64_t> shape(ndim + 1);  // never empty: dims must not be NULL
    accel_check(accel_tensor_shape(tensor, shape.data(), ndim));
    shape.resize(ndim);
    accel_dtype dtype = ACCEL_FLOAT32;
    accel_check(accel_tensor_dtype(tensor, &dtype));
    int64_t numel = 0;
    accel_check(accel_tensor_numel(tensor, &numel));
    std::vector<char> bytes(static_cast<size_t>(numel) * accel_dtype_size(dtype));
    accel_check(accel_tensor_copy_to(tensor, bytes.data(), bytes.size()));
    write(field, dtype, shape, bytes.data(), bytes.size());
  }

 private:
  accel_tensor** fields_;
  size_t count_;
};

// A collate function written in the host language. The batch's samples come
// flat: sample s is ids[offsets[s] .. offsets[s + 1]); label_kind 0: no
// labels, 1: labels[s] per sample, 2: labels aligned with ids.
class Collator {
 public:
  virtual ~Collator() {}
  virtual std::string collate(const std::vector<int64_t>& ids, const std::vector<int64_t>& offsets,
                              const std::vector<int64_t>& labels, int label_kind, CollateWriter* out) = 0;
};

// The state an object saves into a checkpoint.
class StateWriter {
 public:
  explicit StateWriter(accel_bytes_writer* writer) : writer_(writer) {}
  void write(const void* data, size_t size) { accel_check(accel_bytes_write(writer_, data, size)); }

 private:
  accel_bytes_writer* writer_;
};

// An object saved and restored with every checkpoint (register_for_checkpointing).
class CheckpointObject {
 public:
  virtual ~CheckpointObject() {}
  virtual std::string save_state(StateWriter* out) = 0;
  virtual std::string load_state(const char* data, size_t size) = 0;
};

// Runs with the checkpoint directory before save_state writes or load_state reads.
class StateHook {
 public:
  virtual ~StateHook() {}
  virtual std::string run(const std::string& dir) = 0;
};

// An experiment tracker written in the host language (add_tracker).
class Tracker {
 public:
  virtual ~Tracker() {}
  virtual std::string init(const std::string& run_name, const std::string& config_json) { return ""; }
  // step < 0: the caller gave no step.
  virtual std::string log(const std::vector<std::string>& names, const std::vector<double>& values, int64_t step) {
    return "";
  }
  virtual std::string finish() { return ""; }
};

namespace accel_bridge {

// Runs a callback body; a message or a C++ exception becomes an error status
// with accel_set_error, so nothing unwinds through libaccel.
template <class Body>
accel_status call_back(Body&& body) noexcept {
  try {
    std::string message = body();
    if (message.empty()) return ACCEL_OK;
    accel_set_error(message.c_str());
  } catch (const AccelFailure& e) {
    accel_set_error(e.what());
    return static_cast<accel_status>(e.code());
  } catch (const std::exception& e) {
    accel_set_error(e.what());
  } catch (...) {
    accel_set_error("unknown exception in a callback");
  }
  return ACCEL_ERR_INVALID_ARGUMENT;
}

struct MapContext {
  DatasetSource* source;
  int64_t length;
  int num_fields;
};
inline accel_status map_length(void* user, int64_t* out) {
  *out = static_cast<MapContext*>(user)->length;
  return ACCEL_OK;
}
inline accel_status map_get_sample(void* user, int64_t index, void* const* fields, const size_t* nbytes) {
  auto* context = static_cast<MapContext*>(user);
  return call_back([&] {
    SampleWriter writer(fields, nbytes, context->num_fields);
    return context->source->get_sample(index, &writer);
  });
}
inline void map_release(void* user) {
  auto* context = static_cast<MapContext*>(user);
  delete context->source;
  delete context;
}

struct StreamContext {
  StreamSource* source;
  int num_fields;
};
inline accel_status stream_next(void* user, void* const* fields, const size_t* nbytes, int* has_sample) {
  auto* context = static_cast<StreamContext*>(user);
  return call_back([&] {
    SampleWriter writer(fields, nbytes, context->num_fields);
    std::string message = context->source->next_sample(&writer);
    *has_sample = writer.ended() ? 0 : 1;
    return message;
  });
}
inline accel_status stream_reset(void* user, uint64_t epoch) {
  return call_back([&] { return static_cast<StreamContext*>(user)->source->reset(epoch); });
}
inline void stream_release(void* user) {
  auto* context = static_cast<StreamContext*>(user);
  delete context->source;
  delete context;
}

inline void append_tensor(const accel_tensor* tensor, std::vector<int64_t>& to) {
  int64_t n = 0;
  accel_check(accel_tensor_numel(tensor, &n));
  size_t at = to.size();
  to.resize(at + static_cast<size_t>(n));
  accel_check(accel_tensor_copy_to(tensor, to.data() + at, static_cast<size_t>(n) * sizeof(int64_t)));
}
inline accel_status collate_call(void* user, const accel_tensor* const* ids, const accel_tensor* const* labels,
                                 size_t num_samples, accel_tensor** fields, size_t num_fields) {
  return call_back([&] {
    std::vector<int64_t> flat, offsets{0}, flat_labels;
    int kind = 0;
    for (size_t s = 0; s < num_samples; ++s) {
      append_tensor(ids[s], flat);
      offsets.push_back(static_cast<int64_t>(flat.size()));
      if (labels == nullptr) continue;
      size_t ndim = 0;
      accel_check(accel_tensor_ndim(labels[s], &ndim));
      kind = ndim == 0 ? 1 : 2;
      append_tensor(labels[s], flat_labels);
    }
    CollateWriter writer(fields, num_fields);
    return static_cast<Collator*>(user)->collate(flat, offsets, flat_labels, kind, &writer);
  });
}
inline void collate_release(void* user) { delete static_cast<Collator*>(user); }

inline accel_status checkpoint_save(void* user, accel_bytes_writer* writer) {
  return call_back([&] {
    StateWriter out(writer);
    return static_cast<CheckpointObject*>(user)->save_state(&out);
  });
}
inline accel_status checkpoint_load(void* user, const void* data, size_t size) {
  return call_back(
      [&] { return static_cast<CheckpointObject*>(user)->load_state(static_cast<const char*>(data), size); });
}
inline void checkpoint_release(void* user) { delete static_cast<CheckpointObject*>(user); }

inline accel_status hook_run(void* user, const char* dir) {
  return call_back([&] { return static_cast<StateHook*>(user)->run(dir); });
}
inline void hook_release(void* user) { delete static_cast<StateHook*>(user); }

inline accel_status tracker_init(void* user, const char* run_name, const char* config_json) {
  return call_back([&] { return static_cast<Tracker*>(user)->init(run_name, config_json); });
}
inline accel_status tracker_log(void* user, const char* const* names, const double* values, size_t count, int64_t step,
                                int has_step) {
  return call_back([&] {
    std::vector<std::string> name_list(names, names + count);
    std::vector<double> value_list(values, values + count);
    return static_cast<Tracker*>(user)->log(name_list, value_list, has_step ? step : -1);
  });
}
inline accel_status tracker_finish(void* user) {
  return call_back([&] { return static_cast<Tracker*>(user)->finish(); });
}

}  // namespace accel_bridge
