# SPDX-License-Identifier: Apache-2.0
# ehbt_install_python(SUBDIR TYPE FILE...): installs FILEs (generator expressions allowed) of
# type FILE or MODULE into <site>/SUBDIR, where <site> is the Python package directory the
# target interpreter searches for the install prefix (cmake/PythonSiteDir.cmake), decided
# when installing: `cmake --install build --prefix /usr/local` gives
# /usr/local/lib/python3.X/dist-packages on Debian, --prefix /usr gives
# /usr/lib/python3/dist-packages.
if(Python3_EXECUTABLE)
  set(EHBT_INSTALL_PYTHON "${Python3_EXECUTABLE}")
else()
  set(EHBT_INSTALL_PYTHON /usr/bin/python3)
endif()
set(EHBT_PYTHON_SITE_DIR "" CACHE STRING
    "Python package directory relative to the prefix (empty: ask the interpreter at install time)")

function(ehbt_install_python subdir type)
  set(files "")
  foreach(f ${ARGN})
    string(APPEND files " \"${f}\"")
  endforeach()
  install(CODE "
    set(EHBT_PYTHON \"${EHBT_INSTALL_PYTHON}\")
    set(EHBT_PYTHON_SITE_DIR \"${EHBT_PYTHON_SITE_DIR}\")
    include(\"${PROJECT_SOURCE_DIR}/cmake/PythonSiteDir.cmake\")
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${EHBT_SITE_DIR}/${subdir}\"
         TYPE ${type} FILES ${files})
    # Byte-compiled here, as Debian's packaging does: a user who cannot write the directory
    # would otherwise compile every module from source on every start (tens of ms per run).
    execute_process(COMMAND \"\${EHBT_PYTHON}\" -m compileall -q
                    \"\${CMAKE_INSTALL_PREFIX}/\${EHBT_SITE_DIR}/${subdir}\"
                    OUTPUT_QUIET ERROR_QUIET)")
endfunction()
