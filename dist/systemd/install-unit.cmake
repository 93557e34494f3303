# SPDX-License-Identifier: Apache-2.0
# Installs ehbt-triage-watch.service with @BINDIR@ set to the prefix's bin directory, decided
# at install time (cmake --install --prefix, DESTDIR) rather than when the build was configured.
set(unit_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
file(READ "${EHBT_UNIT_SOURCE}" unit)
string(REPLACE "@BINDIR@" "${CMAKE_INSTALL_PREFIX}/bin" unit "${unit}")
file(MAKE_DIRECTORY "${unit_dir}")
message(STATUS "Installing: ${unit_dir}/ehbt-triage-watch.service")
file(WRITE "${unit_dir}/ehbt-triage-watch.service" "${unit}")
