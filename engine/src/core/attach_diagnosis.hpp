// SPDX-License-Identifier: Apache-2.0
// Why attaching to a process failed, in the user's terms. PTRACE_SEIZE answers EPERM for
// several unrelated reasons -- a process another tracer (GDB, strace) holds, a zombie, a
// kernel thread, and a real lack of permission (Yama's ptrace_scope, CAP_SYS_PTRACE) --
// and only the last is helped by the permission hint. /proc tells them apart.
#pragma once

#include <string>

namespace ehbt::core {

// "cannot attach to PID[ (COMM)]: WHY", one line; `err` is the errno of the failed attach.
//   no such process                          (ESRCH, or /proc/PID is gone)
//   it is a zombie: it has no memory or registers left to unwind   (State: Z)
//   it is a kernel thread: no user-space stack                     (PF_KTHREAD)
//   already traced by pid N (COMM)                                 (TracerPid: N)
//   strerror(err), with "(ptrace_scope? CAP_SYS_PTRACE?)" for EPERM otherwise
std::string attach_error(int pid, int err);

// The same with /proc at `proc_root` (a directory of hand-written PID/status, PID/stat and
// PID/comm files in tests).
std::string attach_error_from(int pid, int err, const std::string& proc_root);

}  // namespace ehbt::core
