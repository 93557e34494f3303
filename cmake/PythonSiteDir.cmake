# SPDX-License-Identifier: Apache-2.0
# Install-time helper (included from install(CODE)): sets EHBT_SITE_DIR to where the Python
# packages go, relative to the prefix actually installed to (so `cmake --install --prefix`
# is honoured). In: EHBT_PYTHON (the interpreter), EHBT_PYTHON_SITE_DIR (a fixed answer when
# not empty). The answer is computed once per install run and reported once.
if(DEFINED EHBT_SITE_DIR)
  return()
endif()
if(EHBT_PYTHON_SITE_DIR)
  set(EHBT_SITE_DIR "${EHBT_PYTHON_SITE_DIR}")
else()
  execute_process(
    COMMAND "${EHBT_PYTHON}" "${CMAKE_CURRENT_LIST_DIR}/python_site_dir.py" "${CMAKE_INSTALL_PREFIX}"
    OUTPUT_VARIABLE EHBT_SITE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR EHBT_SITE_DIR STREQUAL "")
    message(FATAL_ERROR "ehbt: cannot ask ${EHBT_PYTHON} where Python packages go (${rc})")
  endif()
endif()
message(STATUS "ehbt: Python packages go to ${CMAKE_INSTALL_PREFIX}/${EHBT_SITE_DIR}")
