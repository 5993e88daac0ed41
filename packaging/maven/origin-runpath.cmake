# cmake -DFILE=lib.so -P origin-runpath.cmake: sets the RUNPATH of a library bundled in the
# Maven jar to $ORIGIN alone. The build tree's RUNPATH names build directories and ends with
# the empty entries CMake pads it with for install-time rewriting, which the loader reads as
# the current directory.
file(RPATH_SET FILE "${FILE}" NEW_RPATH "\$ORIGIN")
