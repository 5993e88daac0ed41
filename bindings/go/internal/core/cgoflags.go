// Package core is the SWIG-generated wrapper of libaccel (bindings/swig/accel_go.i).
// CMake generates core.go, core_wrap.cxx and core_wrap.h here (target
// accel_go_swig); they are not committed. Use package accel instead.
//
// libaccel itself is found through the linker's search path: pass its
// directory in CGO_LDFLAGS (-L<dir> -Wl,-rpath,<dir>) when it is not installed.
package core

// #cgo CPPFLAGS: -I${SRCDIR}/../../../../include -I${SRCDIR}/../../../swig
// #cgo CXXFLAGS: -std=c++17 -Wno-unused-parameter
// #cgo LDFLAGS: -laccel
import "C"
