// SPDX-License-Identifier: Apache-2.0
// debuginfod client (elfutils' libdebuginfod): files fetched by build-id from the servers in
// DEBUGINFOD_URLS, cached where debuginfod's own client caches them ($DEBUGINFOD_CACHE_PATH,
// else ~/.cache/debuginfod_client), so eu-stack, GDB and ehbt share one cache.
#pragma once

#include <chrono>
#include <string>

#include "ehbt/core.hpp"

namespace ehbt::core {

enum class DebuginfodKind { Executable, Debuginfo };

struct DebuginfodResult {
  std::string path;        // the cached file, when fetched
  std::string error;       // why not (one line), when not; "" also when fetching is off
  bool not_found = false;  // the servers answered: they have no such file
  // Fetching had stopped before this call (server unreachable, budget spent): `error` is the
  // reason an earlier result already carried, and callers say it only once per target.
  bool stopped_before = false;
};

// The fetches of one target. The timeout is the budget of all of them together: a server
// that is down or slow costs at most that long per target, then fetching stops (and a
// server that refused the connection is not asked again).
class DebuginfodSession {
 public:
  explicit DebuginfodSession(const TargetOptions& options);
  bool enabled() const { return enabled_; }
  DebuginfodResult fetch(const std::string& build_id, DebuginfodKind kind);

 private:
  bool enabled_ = false;
  bool given_up_ = false;
  std::string why_given_up_;
  double budget_seconds_ = 0;
  bool progress_ = false;
  std::chrono::steady_clock::duration spent_{};
};

// Whether DEBUGINFOD_URLS names any server.
bool debuginfod_urls_set();

}  // namespace ehbt::core
