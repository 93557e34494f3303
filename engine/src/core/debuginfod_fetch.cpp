// SPDX-License-Identifier: Apache-2.0
// One libdebuginfod client per fetch: the library keeps per-client state (the last URL,
// headers) that must not mix between threads, and a fetch costs far more than a client.
#include "core/debuginfod_fetch.hpp"

#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ehbt::core {
namespace {

using Clock = std::chrono::steady_clock;

struct Progress {
  Clock::time_point start;
  Clock::time_point last_report;
  double timeout_seconds;
  bool report;
  bool timed_out = false;
  const char* what;
};

// Called by libdebuginfod while it waits and while it receives: `a` bytes so far of `b`
// (0 when unknown). A nonzero return abandons the transfer.
int on_progress(debuginfod_client* client, long a, long b) {
  auto* p = static_cast<Progress*>(debuginfod_get_user_data(client));
  if (p == nullptr) return 0;
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - p->start).count();
  if (p->timeout_seconds > 0 && elapsed > p->timeout_seconds) {
    p->timed_out = true;
    return 1;
  }
  // Say something once a download has taken a second, then every two seconds.
  if (p->report && elapsed >= 1.0 &&
      std::chrono::duration<double>(now - p->last_report).count() >= 2.0) {
    p->last_report = now;
    if (b > 0) {
      std::fprintf(stderr, "ehbt: debuginfod: downloading %s: %ld of %ld bytes\n", p->what, a, b);
    } else {
      std::fprintf(stderr, "ehbt: debuginfod: downloading %s: %ld bytes\n", p->what, a);
    }
  }
  return 0;
}

}  // namespace

bool debuginfod_urls_set() {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && *urls != '\0';
}

DebuginfodSession::DebuginfodSession(const TargetOptions& options)
    : enabled_(options.debuginfod || debuginfod_urls_set()),
      budget_seconds_(options.debuginfod_timeout),
      progress_(options.debuginfod_progress) {}

DebuginfodResult DebuginfodSession::fetch(const std::string& build_id, DebuginfodKind kind) {
  DebuginfodResult out;
  if (!enabled_ || build_id.empty()) return out;
  if (given_up_) {
    out.error = why_given_up_;
    return out;
  }
  if (!debuginfod_urls_set()) {
    given_up_ = true;
    why_given_up_ = out.error = "DEBUGINFOD_URLS names no server";
    return out;
  }
  const double left = budget_seconds_ - std::chrono::duration<double>(spent_).count();
  debuginfod_client* client = debuginfod_begin();
  if (client == nullptr) {
    out.error = "cannot start the debuginfod client";
    return out;
  }
  const std::string what =
      (kind == DebuginfodKind::Executable ? "executable " : "debuginfo ") + build_id;
  const auto start = Clock::now();
  Progress progress{start, start, left, progress_, false, what.c_str()};
  debuginfod_set_user_data(client, &progress);
  debuginfod_set_progressfn(client, on_progress);
  char* path = nullptr;
  const auto* id = reinterpret_cast<const unsigned char*>(build_id.c_str());
  // Length 0: libdebuginfod takes the id as a hex string.
  const int fd = kind == DebuginfodKind::Executable
                     ? debuginfod_find_executable(client, id, 0, &path)
                     : debuginfod_find_debuginfo(client, id, 0, &path);
  spent_ += Clock::now() - start;
  if (fd >= 0) {
    ::close(fd);
    if (path != nullptr) out.path = path;
  } else if (progress.timed_out || -fd == ETIME || -fd == ETIMEDOUT) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", budget_seconds_);
    given_up_ = true;
    why_given_up_ = out.error = "no answer within " + std::string(buf) +
                                " s (--debuginfod-timeout); not asked again for this core";
  } else if (-fd == ENOENT) {
    out.not_found = true;
    out.error = "not found";
  } else {
    out.error = std::strerror(-fd);
    if (-fd == ECONNREFUSED || -fd == EHOSTUNREACH || -fd == ENETUNREACH) {
      given_up_ = true;
      why_given_up_ = "server unreachable (" + out.error + "); not asked again for this core";
      out.error = why_given_up_;
    }
  }
  std::free(path);
  debuginfod_end(client);
  return out;
}

}  // namespace ehbt::core
