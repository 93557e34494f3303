# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage's exit statuses (INTERFACES.md), in a module of their own so that everything
that decides one (cli, run, recent) imports them from here and not from each other."""

EXIT_OK = 0  # every core processed (partial traces included)
EXIT_FAILED = 1  # some cores could not be read, or were analysed without some of their files
EXIT_USAGE = 2  # bad option or value, a path or store that cannot be used
