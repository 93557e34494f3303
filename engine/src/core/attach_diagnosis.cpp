// SPDX-License-Identifier: Apache-2.0
#include "core/attach_diagnosis.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/proc_files.hpp"

namespace ehbt::core {
namespace {

constexpr std::size_t kMaxStatusBytes = 16384;
constexpr std::size_t kMaxStatBytes = 4096;
// include/linux/sched.h: "I am a kernel thread". Part of /proc/PID/stat's flags field.
constexpr uint64_t kPfKthread = 0x00200000;

// The value of "KEY:\tVALUE" in /proc/PID/status text ("" when absent).
std::string status_field(const std::string& status, std::string_view key) {
  std::size_t at = 0;
  while (at < status.size()) {
    std::size_t end = status.find('\n', at);
    if (end == std::string::npos) end = status.size();
    std::string_view line(status.data() + at, end - at);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
      return std::string(line);
    }
    at = end + 1;
  }
  return {};
}

// The flags field (the ninth) of /proc/PID/stat. The command name (second field) may hold
// spaces and parentheses: fields are counted from the last ')'.
std::optional<uint64_t> stat_flags(const std::string& stat) {
  std::size_t p = stat.rfind(')');
  if (p == std::string::npos) return std::nullopt;
  ++p;
  // After the name: state ppid pgrp session tty_nr tpgid flags.
  for (int field = 0; field < 7; ++field) {
    while (p < stat.size() && stat[p] == ' ') ++p;
    const std::size_t start = p;
    while (p < stat.size() && stat[p] != ' ') ++p;
    if (start == p) return std::nullopt;
    if (field == 6) {
      uint64_t v = 0;
      for (std::size_t i = start; i < p; ++i) {
        if (stat[i] < '0' || stat[i] > '9' || v > UINT64_MAX / 10) return std::nullopt;
        v = v * 10 + static_cast<uint64_t>(stat[i] - '0');
      }
      return v;
    }
  }
  return std::nullopt;
}

std::string trim_newline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

std::string attach_error_from(int pid, int err, const std::string& proc_root) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  std::string head = "cannot attach to " + std::to_string(pid);
  const std::string status = read_proc_file(dir + "/status", kMaxStatusBytes);
  if (status.empty()) {
    // No /proc entry: the process never was, or it has been reaped meanwhile.
    if (err == ESRCH || err == 0) return head + ": no such process";
    return head + ": " + std::strerror(err);
  }
  const std::string name = status_field(status, "Name");
  if (!name.empty()) head += " (" + name + ")";
  if (status_field(status, "State").starts_with("Z")) {
    return head + ": it is a zombie: it has no memory or registers left to unwind";
  }
  if (auto flags = stat_flags(read_proc_file(dir + "/stat", kMaxStatBytes));
      flags && (*flags & kPfKthread) != 0) {
    return head + ": it is a kernel thread: no user-space stack";
  }
  const std::string tracer = status_field(status, "TracerPid");
  if (!tracer.empty() && tracer != "0") {
    std::string by = "already traced by pid " + tracer;
    const std::string comm = trim_newline(read_proc_file(proc_root + "/" + tracer + "/comm", 64));
    if (!comm.empty()) by += " (" + comm + ")";
    return head + ": " + by;
  }
  if (err == ESRCH) return head + ": no such process";
  std::string msg = head + ": " + std::strerror(err);
  if (err == EPERM) msg += " (ptrace_scope? CAP_SYS_PTRACE?)";
  return msg;
}

std::string attach_error(int pid, int err) {
  return attach_error_from(pid, err, "/proc");
}

}  // namespace ehbt::core
