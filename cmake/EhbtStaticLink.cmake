# SPDX-License-Identifier: Apache-2.0
# Fully static executables (`ehbt`): a one-shot command on a small core otherwise spends much
# of its run in ld.so, mapping and relocating libc, libelf and the four decompressors, and in
# the page faults that costs (noreturn.core: 186 -> 124 page faults, 1.76 M -> 1.30 M
# instructions, CPU 12.4 -> 7.5 ms with the static build).
#
# ehbt_allow_static(<pkg>...) rewrites the link interface of each PkgConfig::<pkg> imported
# target so that a consumer whose EHBT_STATIC_LINK property is true links the library's static
# archives (pkg-config --static order, so e.g. libelf.a brings libz.a after it) and every other
# consumer (libehbt.so, the Python module, tests) keeps the shared library. It sets
# EHBT_STATIC_OK to FALSE in the caller when an archive is missing; the tool then stays
# dynamic rather than fail to build.
set(EHBT_STATIC_OK TRUE)

function(ehbt_allow_static)
  set(ok ${EHBT_STATIC_OK})
  foreach(pkg IN LISTS ARGN)
    set(when "$<BOOL:$<TARGET_PROPERTY:EHBT_STATIC_LINK>>")
    set(items)
    foreach(lib IN LISTS ${pkg}_STATIC_LIBRARIES)
      # The C library's own pieces come with -static itself.
      if(lib MATCHES "^(pthread|dl|m|rt|c)$")
        continue()
      endif()
      find_library(EHBT_STATIC_${lib} NAMES lib${lib}.a HINTS ${${pkg}_STATIC_LIBRARY_DIRS})
      if(NOT EHBT_STATIC_${lib})
        set(ok FALSE)
        continue()
      endif()
      list(APPEND items "$<${when}:${EHBT_STATIC_${lib}}>")
    endforeach()
    get_target_property(shared PkgConfig::${pkg} INTERFACE_LINK_LIBRARIES)
    foreach(lib IN LISTS shared)
      list(APPEND items "$<$<NOT:${when}>:${lib}>")
    endforeach()
    set_property(TARGET PkgConfig::${pkg} PROPERTY INTERFACE_LINK_LIBRARIES "${items}")
  endforeach()
  set(EHBT_STATIC_OK ${ok} PARENT_SCOPE)
endfunction()
