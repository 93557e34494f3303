// SPDX-License-Identifier: Apache-2.0
// The signal-time detach. The handler only touches a static array of lock-free atomics and
// calls ptrace/sigaction/raise, all async-signal-safe (ptrace and sigaction are plain system
// calls).
#include "core/attach_guard.hpp"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/types.h>

#include <atomic>
#include <mutex>

namespace ehbt::core {
namespace {

constexpr int kMaxTids = 16384;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kNumSignals = 3;

std::atomic<int> g_tids[kMaxTids];
std::mutex g_mu;  // registration only; never taken in the handler
int g_count = 0;
struct sigaction g_old[kNumSignals];
bool g_installed[kNumSignals];

void on_signal(int sig) {
  for (auto& slot : g_tids) {
    int tid = slot.exchange(0);
    if (tid != 0) ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  }
  for (int i = 0; i < kNumSignals; ++i) {
    if (kSignals[i] == sig && g_installed[i]) sigaction(sig, &g_old[i], nullptr);
  }
  // Blocked while this handler runs; delivered to the restored disposition on return.
  raise(sig);
}

void install() {
  for (int i = 0; i < kNumSignals; ++i) {
    struct sigaction old {};
    if (sigaction(kSignals[i], nullptr, &old) != 0) continue;
    // A signal the tool ignores cannot interrupt it: leave that one alone.
    if (old.sa_handler == SIG_IGN && !(old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaddset(&sa.sa_mask, s);
    sa.sa_flags = 0;
    if (sigaction(kSignals[i], &sa, &g_old[i]) == 0) g_installed[i] = true;
  }
}

void uninstall() {
  for (int i = 0; i < kNumSignals; ++i) {
    if (!g_installed[i]) continue;
    struct sigaction cur {};
    // Put the old disposition back only if nobody replaced ours meanwhile.
    if (sigaction(kSignals[i], nullptr, &cur) == 0 && cur.sa_handler == on_signal) {
      sigaction(kSignals[i], &g_old[i], nullptr);
    }
    g_installed[i] = false;
  }
}

}  // namespace

bool guard_register(int tid) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& slot : g_tids) {
    int expected = 0;
    if (slot.compare_exchange_strong(expected, tid)) {
      if (g_count++ == 0) install();
      return true;
    }
  }
  return false;
}

void guard_unregister(int tid) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& slot : g_tids) {
    int expected = tid;
    if (slot.compare_exchange_strong(expected, 0)) {
      if (--g_count == 0) uninstall();
      return;
    }
  }
}

}  // namespace ehbt::core
