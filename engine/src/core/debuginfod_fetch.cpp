// SPDX-License-Identifier: Apache-2.0
// One libdebuginfod client per fetch: the library keeps per-client state (the last URL,
// headers) that must not mix between threads, and a fetch costs far more than a client.
// libdebuginfod is opened with dlopen on the first fetch, as elfutils' own tools do: linked
// directly, it and the ~30 libraries behind it (curl, TLS, LDAP, ...) were loaded and
// relocated at every start of every program using the engine, most of which never fetch.
#include "core/debuginfod_fetch.hpp"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <mutex>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace ehbt::core {
namespace {

using Clock = std::chrono::steady_clock;

// The libdebuginfod functions the fetch uses, resolved once.
struct DebuginfodApi {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  decltype(&debuginfod_set_user_data) set_user_data = nullptr;
  decltype(&debuginfod_get_user_data) get_user_data = nullptr;
  decltype(&debuginfod_set_progressfn) set_progressfn = nullptr;
  decltype(&debuginfod_find_executable) find_executable = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  // The library's own free, for the paths it returns: in a static `ehbt`, dlopen gives the
  // library a C library (and heap) of its own, so the program's free must not take them.
  void (*release)(void*) = nullptr;
  std::string error;  // why it is unusable; "" when every pointer is set
};

const DebuginfodApi& debuginfod_api() {
  static DebuginfodApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    // Never closed: the library may keep threads or handlers of its own.
    void* lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      api.error = std::string("cannot load libdebuginfod.so.1: ") + (why ? why : "unknown error");
      return;
    }
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr && api.error.empty())
        api.error = std::string("libdebuginfod lacks ") + name;
    };
    get(api.begin, "debuginfod_begin");
    get(api.end, "debuginfod_end");
    get(api.set_user_data, "debuginfod_set_user_data");
    get(api.get_user_data, "debuginfod_get_user_data");
    get(api.set_progressfn, "debuginfod_set_progressfn");
    get(api.find_executable, "debuginfod_find_executable");
    get(api.find_debuginfo, "debuginfod_find_debuginfo");
    get(api.release, "free");
  });
  return api;
}

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
  auto* p = static_cast<Progress*>(debuginfod_api().get_user_data(client));
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
    out.stopped_before = true;
    return out;
  }
  if (!debuginfod_urls_set()) {
    given_up_ = true;
    why_given_up_ = out.error = "DEBUGINFOD_URLS names no server";
    return out;
  }
  const DebuginfodApi& api = debuginfod_api();
  if (!api.error.empty()) {
    given_up_ = true;
    why_given_up_ = out.error = api.error;
    return out;
  }
  const double left = budget_seconds_ - std::chrono::duration<double>(spent_).count();
  debuginfod_client* client = api.begin();
  if (client == nullptr) {
    out.error = "cannot start the debuginfod client";
    return out;
  }
  const std::string what =
      (kind == DebuginfodKind::Executable ? "executable " : "debuginfo ") + build_id;
  const auto start = Clock::now();
  Progress progress{start, start, left, progress_, false, what.c_str()};
  api.set_user_data(client, &progress);
  api.set_progressfn(client, on_progress);
  char* path = nullptr;
  const auto* id = reinterpret_cast<const unsigned char*>(build_id.c_str());
  // Length 0: libdebuginfod takes the id as a hex string.
  const int fd = kind == DebuginfodKind::Executable ? api.find_executable(client, id, 0, &path)
                                                    : api.find_debuginfo(client, id, 0, &path);
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
  api.release(path);
  api.end(client);
  return out;
}

}  // namespace ehbt::core
