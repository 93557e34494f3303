# SPDX-License-Identifier: Apache-2.0
# Removes the .py files of the build tree's ehbt package that the source tree no longer has
# (a module deleted from engine/python/ehbt/ must not stay importable from an old build).
# Run with -DSRC=<engine/python/ehbt> -DPKG=<build/engine/python/ehbt>.
file(GLOB built RELATIVE ${PKG} ${PKG}/*.py)
foreach(name IN LISTS built)
  if(NOT EXISTS ${SRC}/${name} AND NOT name STREQUAL "_version.py")
    file(REMOVE ${PKG}/${name})
  endif()
endforeach()
