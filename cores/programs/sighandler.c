// SPDX-License-Identifier: Apache-2.0
/* A SIGUSR1 handler crashes (null write) while it interrupts fx_interrupted. fx_interrupted
 * sends the signal to itself with an inline system call, so the interrupted pc is inside
 * fx_interrupted itself (right after the syscall instruction), not in libc. The backtrace must
 * cross the kernel's (or qemu's) signal trampoline back into fx_interrupted, and there the pc
 * must be used as is (it is not a return address). Built with FX_SIGINFO the handler is an
 * SA_SIGINFO one: on i386 that selects the kernel's rt_sigframe instead of the old sigframe. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE void fx_handler_crash(int sig) {
  fx_sink = sig;
  fx_null_write(sig);
  FX_KEEP();
}

FX_NOINLINE void fx_handler(int sig) {
  fx_handler_crash(sig + 100);
  FX_KEEP();
}

/* kill(pid, sig) without a libc call. */
static inline long fx_raw_kill(long pid, long sig) {
#if defined(__x86_64__)
  long ret = 62; /* __NR_kill */
  __asm__ volatile("syscall" : "+a"(ret) : "D"(pid), "S"(sig) : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = 129; /* __NR_kill */
  register long x0 __asm__("x0") = pid;
  register long x1 __asm__("x1") = sig;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
  return x0;
#elif defined(__i386__)
  long ret = 37; /* __NR_kill; int $0x80, as the machine has no vDSO under qemu-user */
  __asm__ volatile("int $0x80" : "+a"(ret) : "b"(pid), "c"(sig) : "memory");
  return ret;
#elif defined(__s390x__)
  register long r2 __asm__("r2") = pid;
  register long r3 __asm__("r3") = sig;
  __asm__ volatile("svc 37" : "+d"(r2) : "d"(r3) : "memory"); /* __NR_kill */
  return r2;
#else
#error "add the kill system call for this architecture"
#endif
}

FX_NOINLINE void fx_interrupted(long pid) {
  fx_sink = 1;
  fx_raw_kill(pid, SIGUSR1);
  fx_sink = 2; /* the handler never returns here */
  FX_KEEP();
}

FX_NOINLINE void fx_sig_caller(long pid) {
  fx_interrupted(pid);
  FX_KEEP();
}

#ifdef FX_SIGINFO
FX_NOINLINE void fx_info_handler(int sig, siginfo_t* info, void* uc) {
  (void)info;
  (void)uc;
  fx_handler(sig);
  FX_KEEP();
}
#endif

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
#ifdef FX_SIGINFO
  sa.sa_sigaction = fx_info_handler;
  sa.sa_flags = SA_SIGINFO;
#else
  sa.sa_handler = fx_handler;
#endif
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, 0);
  fx_sig_caller(getpid());
  return 0;
}
