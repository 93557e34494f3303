// SPDX-License-Identifier: Apache-2.0
// Threads this process has ptrace-attached, kept where a signal handler can reach them: if
// the tool is interrupted (SIGINT, SIGTERM, SIGHUP) while attached, the handler detaches every
// thread and re-raises the signal, so a Ctrl-C never leaves the target stopped.
#pragma once

namespace ehbt::core {

// Registers a thread; installs the handlers with the first one. False when the table is full
// (the thread stays attached; only the signal-time detach misses it).
bool guard_register(int tid);
// Forgets a thread (after detaching it normally); removes the handlers with the last one.
void guard_unregister(int tid);

}  // namespace ehbt::core
