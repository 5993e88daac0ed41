/* Python: accel.core (_core.so), wrapped by the pure-Python package accel
 * (the modules of bindings/python/accel/), which is what users import.
 * threads="1": every call releases the GIL, so prefetch worker threads can
 * call back into Python datasets while the main thread waits in next(). */
%module(package="accel", directors="1", threads="1") core

%{
#include "accel_bridge.hpp"
static PyObject* accel_py_error = 0;

static void accel_py_raise(int code, const char* message) {
  /* libaccel's messages are UTF-8; were one not, "(si)" would fail and leave an
     AccelError with no message and the wrong code. */
  PyObject* text = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "backslashreplace");
  PyObject* args = text ? Py_BuildValue("(Ni)", text, code) : NULL;
  PyErr_SetObject(accel_py_error, args);
  Py_XDECREF(args);
}

/* "TypeName: message" of the pending Python exception, which is cleared. */
static std::string accel_py_take_error() {
  PyObject *type = 0, *value = 0, *traceback = 0;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = "Python exception";
  if (type) {
    PyObject* name = PyObject_GetAttrString(type, "__name__");
    if (name && PyUnicode_Check(name)) text = PyUnicode_AsUTF8(name);
    Py_XDECREF(name);
  }
  if (value) {
    PyObject* str = PyObject_Str(value);
    if (str && PyUnicode_Check(str)) text += std::string(": ") + PyUnicode_AsUTF8(str);
    Py_XDECREF(str);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return text;
}
%}

%init %{
  accel_py_error = PyErr_NewExceptionWithDoc("accel.core.AccelError",
      "A libaccel call failed. args[0] is the message, args[1] (and .code) the accel_status.",
      PyExc_RuntimeError, NULL);
  Py_INCREF(accel_py_error);
  PyModule_AddObject(m, "AccelError", accel_py_error);
%}

%exception {
  try {
    $action
  } catch (const AccelFailure& e) {
    accel_py_raise(e.code(), e.what());
    SWIG_fail;
  } catch (const Swig::DirectorException&) {
    SWIG_fail;
  } catch (const std::exception& e) {
    SWIG_exception_fail(SWIG_RuntimeError, e.what());
  }
}

/* A Python exception in a callback becomes a C++ exception carrying its text;
   accel_bridge turns that into the failing call's error message. */
%feature("director:except") {
  if ($error != NULL) {
    throw std::runtime_error(accel_py_take_error());
  }
}

/* Bytes-like objects (numpy arrays, bytes, bytearray, memoryview, array) in:
   read-only, C-contiguous, no copy. */
%typemap(in) (const void* data, size_t nbytes) (Py_buffer view = {}), (const void* data, size_t size) (Py_buffer view = {}) {
  if (PyObject_GetBuffer($input, &view, PyBUF_C_CONTIGUOUS) < 0) {
    PyErr_Clear();
    SWIG_exception_fail(SWIG_TypeError, "expected a C-contiguous buffer (numpy array, bytes, memoryview)");
  }
  $1 = view.buf;
  $2 = (size_t)view.len;
}
%typemap(freearg) (const void* data, size_t nbytes), (const void* data, size_t size) %{
  if (view$argnum.obj) PyBuffer_Release(&view$argnum);
%}
%typemap(in) (void* data, size_t nbytes) (Py_buffer view = {}) {
  if (PyObject_GetBuffer($input, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
    PyErr_Clear();
    SWIG_exception_fail(SWIG_TypeError, "expected a writable C-contiguous buffer (numpy array, bytearray)");
  }
  $1 = view.buf;
  $2 = (size_t)view.len;
}
%typemap(freearg) (void* data, size_t nbytes) %{
  if (view$argnum.obj) PyBuffer_Release(&view$argnum);
%}
/* Checkpoint state reaches Python as bytes. */
%typemap(directorin) (const char* data, size_t size) %{
  $input = PyBytes_FromStringAndSize($1, (Py_ssize_t)$2);
%}

/* close(): frees the object now; the proxy forgets its pointer, so using it
   afterwards raises ValueError and the garbage collector does not free it again. */
%define ACCEL_PY_CLOSEABLE(TYPE, NAME)
%typemap(check) TYPE* self %{
  if (!$1) SWIG_exception_fail(SWIG_ValueError, NAME " is closed");
%}
%typemap(in) TYPE* CLOSING (void* argp = 0, int res = 0) {
  res = SWIG_ConvertPtr($input, &argp, $descriptor(TYPE*), SWIG_POINTER_RELEASE);
  if (res == SWIG_ERROR_RELEASE_NOT_OWNED) { argp = 0; res = SWIG_OK; }
  if (!SWIG_IsOK(res)) SWIG_exception_fail(SWIG_ArgError(res), "expected a " NAME);
  $1 = (TYPE*)argp;
}
%enddef
ACCEL_PY_CLOSEABLE(AccelTensor, "Tensor")
ACCEL_PY_CLOSEABLE(AccelBatch, "Batch")
ACCEL_PY_CLOSEABLE(AccelAccelerator, "Accelerator")
ACCEL_PY_CLOSEABLE(AccelModel, "Model")
ACCEL_PY_CLOSEABLE(AccelOptimizer, "Optimizer")
ACCEL_PY_CLOSEABLE(AccelScheduler, "Scheduler")
ACCEL_PY_CLOSEABLE(AccelDataset, "Dataset")
ACCEL_PY_CLOSEABLE(AccelDataLoader, "DataLoader")
ACCEL_PY_CLOSEABLE(AccelSequences, "Sequences")
ACCEL_PY_CLOSEABLE(AccelProgress, "ProgressBar")
ACCEL_PY_CLOSEABLE(AccelPartialState, "PartialState")
ACCEL_PY_CLOSEABLE(AccelProfileRun, "Profile")

%include "accel_core.i"

%inline %{
static void close_tensor(AccelTensor* CLOSING) { accel_tensor_free(CLOSING); }
static void close_batch(AccelBatch* CLOSING) { delete CLOSING; }
static void close_accelerator(AccelAccelerator* CLOSING) { accel_bindings_free_accelerator(CLOSING); }
static void close_model(AccelModel* CLOSING) { accel_model_free(CLOSING); }
static void close_optimizer(AccelOptimizer* CLOSING) { accel_optimizer_free(CLOSING); }
static void close_scheduler(AccelScheduler* CLOSING) { accel_scheduler_free(CLOSING); }
static void close_dataset(AccelDataset* CLOSING) { accel_dataset_free(CLOSING); }
static void close_dataloader(AccelDataLoader* CLOSING) { accel_dataloader_free(CLOSING); }
static void close_sequences(AccelSequences* CLOSING) { accel_sequences_free(CLOSING); }
static void close_progress(AccelProgress* CLOSING) { accel_progress_free(CLOSING); }
static void close_partial_state(AccelPartialState* CLOSING) { accel_partial_state_free(CLOSING); }
static void close_profile(AccelProfileRun* CLOSING) {
  if (CLOSING && CLOSING->handle) accel_profile_end(CLOSING->handle);
  delete CLOSING;
}
%}

%pythoncode %{
AccelError = _core.AccelError
AccelError.code = property(lambda self: self.args[1] if len(self.args) > 1 else ERR_INTERNAL)
AccelError.__str__ = lambda self: str(self.args[0]) if self.args else "libaccel error"
%}
