// SPDX-License-Identifier: Apache-2.0
// ehbt's cache directory, as XDG and debuginfod's client place theirs: $EHBT_CACHE_DIR, else
// $XDG_CACHE_HOME/ehbt, else ~/.cache/ehbt. What is cached there is only ever a faster form of
// what the engine can read without it, so a directory that cannot be made or is not safe to
// use is no error: the caller goes without.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ehbt::lines {

// The directory by the rules above ("" when none of the variables is set).
std::string ehbt_cache_dir();

// `sub` inside `root`, both made (mode 0700) where missing, opened as a directory: a
// descriptor (O_CLOEXEC) for the *at() calls, or -1. `sub` itself is never a symbolic link and
// must belong to the effective user with no access for group and others, so that nothing in
// it was put there by someone else (`root` may be a link: the user's own choice).
int open_private_dir(const std::string& root, const char* sub);

// What a cache file is written as before it is renamed into place: "<prefix><name>.<pid>.<n>".
inline constexpr std::string_view kCacheTempPrefix = ".tmp.";
// The usage ledger of a directory's files ending in SUFFIX: "<SUFFIX><this>" in it.
inline constexpr std::string_view kLedgerSuffix = ".usage";

// Puts cache file `name` into `dir` whole, so that concurrent readers never see part of it:
// `write` fills a new temporary file (mode 0600) and returns the bytes it wrote (0: failed);
// one over `max_bytes` is dropped; then, under the lock of the directory's usage ledger
// (SUFFIX.usage: the bytes its files ending in `suffix` hold, as counted by the writers since
// the last scan), room is made among those files (make_room, up to `dir_cap`) where the
// ledger does not say the file fits, and the file is renamed to `name`. False when a step
// fails or the ledger stays locked by another writer; no temporary file is left then.
bool place_cache_file(int dir, const std::string& name, std::string_view suffix, uint64_t max_bytes,
                      uint64_t dir_cap, const std::function<uint64_t(int fd)>& write);

// Removes the least recently modified files of `dir` whose names end in `suffix` until
// `incoming` more bytes fit in `cap`, and temporary files (kCacheTempPrefix) whose writer is
// long gone. Users touch what they use, so modification time orders use. Returns the bytes
// the files ending in `suffix` hold afterwards (UINT64_MAX: the directory cannot be read).
uint64_t make_room(int dir, std::string_view suffix, uint64_t incoming, uint64_t cap);

}  // namespace ehbt::lines
