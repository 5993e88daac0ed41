# Debian packages of the bindings, as Debian names them (packaging/build-deb.sh):
#   python3-libaccel     the Python package (SWIG module + accel/*.py) in /usr/lib/python3/dist-packages
#   libaccel-java        /usr/share/java/libaccel-V.jar (+ libaccel.jar link), JNI library in
#                        /usr/lib/<triplet>/jni (on Debian's JDK's java.library.path)
#   golang-libaccel-dev  the Go module's sources in /usr/share/gocode/src/<module path>, as the
#                        Debian Go team installs them (the generated SWIG files included)
# Python and Java are added when their binding is built here, Go always (sources only). Included from CMakeLists.txt after
# bindings/, because CPack reads the components when include(CPack) runs, at the end.
set(_accel_binding_packages "")

# The libraries find libaccel.so.0 in the system library directory: no RUNPATH.
# Not for the wheel (ACCEL_PYTHON_WHEEL), which installs the module its own way,
# with RUNPATH $ORIGIN (bindings/python/CMakeLists.txt).
if(TARGET accel_python AND NOT ACCEL_PYTHON_WHEEL)
  get_target_property(_accel_py_package accel_python LIBRARY_OUTPUT_DIRECTORY)
  get_filename_component(_accel_py_name ${_accel_py_package} NAME)
  set(_accel_py_dest lib/python3/dist-packages/${_accel_py_name})
  set_target_properties(accel_python PROPERTIES INSTALL_RPATH "")
  install(TARGETS accel_python LIBRARY DESTINATION ${_accel_py_dest} COMPONENT python)
  # SWIG's core.py is written next to the module at build time, hence a directory copy.
  install(DIRECTORY ${_accel_py_package}/ DESTINATION ${_accel_py_dest} COMPONENT python
    PATTERN "__pycache__" EXCLUDE PATTERN "_*.so" EXCLUDE)
  list(APPEND _accel_binding_packages python:python3-libaccel)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-libaccel)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  # The module is built for one Python (CMake's Python3, 3.11 on Debian 12): the ABI range is
  # what dh_python3 would write. numpy: accel converts tensors to and from arrays.
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sys; print(sys.version_info[1])"
    OUTPUT_VARIABLE _accel_py_minor OUTPUT_STRIP_TRAILING_WHITESPACE)
  math(EXPR _accel_py_next "${_accel_py_minor} + 1")
  # dpkg-shlibdeps cannot see libaccel.so.0 (staged, not installed): the libraries the
  # module needs beyond libaccel0's are named here.
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "libaccel0 (= ${ACCEL_DEB_VERSION}), libc6, libgcc-s1, libstdc++6, \
python3 (>= 3.${_accel_py_minor}), python3 (<< 3.${_accel_py_next}), python3-numpy")
  set(CPACK_COMPONENT_PYTHON_DESCRIPTION
"Accelerate's distributed training model over LibTorch (Python 3)
libaccel brings the training model of Hugging Face Accelerate to C and every
language with a C FFI. This package contains its Python 3 module
(import ${_accel_py_name}).")
endif()

if(TARGET accel_jni AND TARGET accel_java)
  get_target_property(_accel_jar accel_java JAR_FILE)
  set_target_properties(accel_jni PROPERTIES INSTALL_RPATH "")
  install(TARGETS accel_jni LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/jni COMPONENT java)
  # Debian's Java policy: a versioned jar and an unversioned link to it.
  install(FILES ${_accel_jar} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/java
    RENAME libaccel-${ACCEL_VERSION}.jar COMPONENT java)
  file(CREATE_LINK libaccel-${ACCEL_VERSION}.jar ${CMAKE_CURRENT_BINARY_DIR}/packaging/libaccel.jar SYMBOLIC)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/packaging/libaccel.jar DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/java
    COMPONENT java)
  list(APPEND _accel_binding_packages java:libaccel-java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_NAME libaccel-java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_SECTION java)
  set(CPACK_DEBIAN_JAVA_PACKAGE_SHLIBDEPS OFF)  # as for python3-libaccel
  # No JRE: Debian's Java policy leaves the choice of runtime to the application.
  set(CPACK_DEBIAN_JAVA_PACKAGE_DEPENDS "libaccel0 (= ${ACCEL_DEB_VERSION}), libc6, libgcc-s1, libstdc++6")
  set(CPACK_COMPONENT_JAVA_DESCRIPTION
"Accelerate's distributed training model over LibTorch (Java)
libaccel brings the training model of Hugging Face Accelerate to C and every
language with a C FFI. This package contains its Java library (package
org.libaccel, /usr/share/java/libaccel.jar) and the JNI library it loads.")
endif()

# The Go package holds sources only (the SWIG output is committed, bindings/go/internal/core),
# so it needs no Go toolchain here: it is built whenever the bindings are.
if(ACCEL_BUILD_BINDINGS AND NOT ACCEL_PYTHON_WHEEL)
  file(STRINGS ${PROJECT_SOURCE_DIR}/bindings/go/go.mod _accel_go_module REGEX "^module ")
  string(REGEX REPLACE "^module +([^ ]+).*" "\\1" _accel_go_module "${_accel_go_module}")
  # Where the Debian Go team puts a module's sources: /usr/share/gocode/src/<module path>.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/go/
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/gocode/src/${_accel_go_module} COMPONENT go
    FILES_MATCHING PATTERN "*.go" PATTERN "*.cxx" PATTERN "*.h" PATTERN "*.hpp" PATTERN "go.mod" PATTERN "go.sum"
    PATTERN "*_test.go" EXCLUDE PATTERN "testdata" EXCLUDE)
  list(APPEND _accel_binding_packages go:golang-libaccel-dev)
  set(CPACK_DEBIAN_GO_PACKAGE_NAME golang-libaccel-dev)
  set(CPACK_DEBIAN_GO_PACKAGE_SECTION golang)
  set(CPACK_DEBIAN_GO_PACKAGE_ARCHITECTURE all)
  set(CPACK_DEBIAN_GO_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_GO_PACKAGE_DEPENDS "libaccel-dev (>= ${ACCEL_DEB_VERSION}), golang-go, pkg-config")
  set(CPACK_COMPONENT_GO_DESCRIPTION
"Accelerate's distributed training model over LibTorch (Go sources)
libaccel brings the training model of Hugging Face Accelerate to C and every
language with a C FFI. This package contains the sources of its Go module
${_accel_go_module}, built with cgo against libaccel-dev.")
endif()

# The binding packages this configuration cannot build, and why, for the packaging test
# (tests/packaging/deb_build.sh), which holds the built .debs to the list docs/packaging.md
# promises: a package is excused only for a missing toolchain, never for a missing target.
set(_accel_skipped_packages "")
if(NOT ACCEL_BUILD_BINDINGS)
  string(APPEND _accel_skipped_packages "python3-libaccel ACCEL_BUILD_BINDINGS is OFF\n"
    "libaccel-java ACCEL_BUILD_BINDINGS is OFF\ngolang-libaccel-dev ACCEL_BUILD_BINDINGS is OFF\n")
elseif(NOT Java_JAVAC_EXECUTABLE OR NOT JAVA_INCLUDE_PATH OR NOT JAVA_INCLUDE_PATH2)
  string(APPEND _accel_skipped_packages "libaccel-java no JDK >= 17 with JNI headers found at configure time\n")
endif()
file(WRITE ${CMAKE_BINARY_DIR}/packaging/skipped-packages.txt "${_accel_skipped_packages}")

foreach(_component_package IN LISTS _accel_binding_packages)
  string(REPLACE ":" ";" _component_package "${_component_package}")
  list(GET _component_package 0 _component)
  list(GET _component_package 1 _package)
  list(APPEND CPACK_COMPONENTS_ALL ${_component})
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/copyright ${CMAKE_BINARY_DIR}/packaging/doc/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_package} COMPONENT ${_component})
endforeach()

include(CPack)
