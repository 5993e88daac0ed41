# The Python wheel (pyproject.toml) runs on PyPI's torch, the one its users already
# have: it links the LibTorch inside the torch package and names it as a dependency
# (torch==, exact: LibTorch has no stable ABI across releases).
#
# Which torch: ACCEL_TORCH_WHEEL when given (the tests pass one), otherwise the
# package the building Python finds (pip's isolated build installs the pinned one
# from pyproject.toml's build requirements). Found by its files, without importing it.
# Out: ACCEL_TORCH_WHEEL, and ACCEL_WHEEL_TORCH_PIN, the version pyproject.toml pins.
file(STRINGS "${PROJECT_SOURCE_DIR}/pyproject.toml" _accel_pin_line REGEX "^dependencies = .*\"torch==" LIMIT_COUNT 1)
string(REGEX MATCH "torch==([0-9.]+)" _accel_pin_match "${_accel_pin_line}")
set(ACCEL_WHEEL_TORCH_PIN "${CMAKE_MATCH_1}")
if(NOT ACCEL_WHEEL_TORCH_PIN)
  message(FATAL_ERROR "pyproject.toml's dependencies name no torch==VERSION")
endif()
if(NOT ACCEL_TORCH_WHEEL)
  # scikit-build-core passes the building interpreter as Python_EXECUTABLE.
  find_package(Python COMPONENTS Interpreter REQUIRED)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c
      "import importlib.util; s = importlib.util.find_spec('torch'); print(s.submodule_search_locations[0] if s else '')"
    OUTPUT_VARIABLE _accel_torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _accel_torch_dir)
    message(FATAL_ERROR "The wheel builds against PyPI's torch ${ACCEL_WHEEL_TORCH_PIN}, and ${Python_EXECUTABLE} "
                        "finds no torch: pip install torch==${ACCEL_WHEEL_TORCH_PIN}, or build with build isolation "
                        "(pip installs it from pyproject.toml's build requirements)")
  endif()
  set(ACCEL_TORCH_WHEEL "${_accel_torch_dir}" CACHE PATH "A torch wheel's package directory: build against its CPU libraries" FORCE)
endif()
