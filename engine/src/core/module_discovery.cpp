// SPDX-License-Identifier: Apache-2.0
// Module discovery strategies. All reads of target memory are fallible and all walks capped
// by Limits::max_modules.
#include "core/module_discovery.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace ehbt::core {
namespace {

constexpr uint64_t kDtNull = 0;
constexpr uint64_t kDtDebug = 21;
// Entries read from one dynamic section; real ones have a few dozen.
constexpr uint64_t kMaxDynamicEntries = 4096;
constexpr std::size_t kMaxPath = 4096;

// struct r_debug: int r_version; struct link_map* r_map at one word (64-bit: 8, 32-bit: 4).
constexpr uint64_t kRMapWords = 1;
// struct link_map: l_addr, l_name, l_ld, l_next, one word each.
constexpr uint64_t kLAddrWords = 0;
constexpr uint64_t kLNameWords = 1;
constexpr uint64_t kLLdWords = 2;
constexpr uint64_t kLNextWords = 3;

}  // namespace

std::string exe_name_from_psinfo(const std::string& fname, const std::string& psargs) {
  std::string first = psargs.substr(0, psargs.find(' '));
  std::string base =
      first.substr(first.find_last_of('/') == std::string::npos ? 0 : first.find_last_of('/') + 1);
  if (!first.empty() && !fname.empty() && base.compare(0, fname.size(), fname) == 0) return first;
  return fname.empty() ? first : fname;
}

bool ModuleCollector::is_module(const std::string& path, uint64_t base, bool executable) {
  MappingEvidence e;
  e.executable = executable;
  std::byte magic[4];
  if (mem_.read(base, magic) == sizeof magic) {
    e.first_page_elf = magic[0] == std::byte{0x7f} && magic[1] == std::byte{'E'} &&
                       magic[2] == std::byte{'L'} && magic[3] == std::byte{'F'};
  } else {
    e.file = resolver_.file_content(path, false);
  }
  return is_module_mapping(e);
}

bool ModuleCollector::covered(uint64_t addr) const {
  for (const Module& m : modules_) {
    if (m.contains(addr)) return true;
  }
  return false;
}

const ResolvedModule* ModuleCollector::add(const ModuleHint& hint) {
  if (modules_.size() >= limits_.max_modules) return nullptr;
  auto r = resolver_.resolve(hint);
  if (!r) return nullptr;
  if (r->file_usable && on_file_) on_file_(r->module);
  modules_.push_back(r->module);
  last_ = std::move(r);
  return &*last_;
}

void ModuleCollector::add_listed(const ModuleHint& hint) {
  if (hint.base && covered(*hint.base)) return;
  add(hint);
}

void ModuleCollector::add_vdso(const Auxv& auxv) {
  auto ehdr = auxv_value(auxv, kAtSysinfoEhdr);
  if (!ehdr || *ehdr == 0 || covered(*ehdr)) return;
  ModuleHint h;
  h.path = "[vdso]";
  h.base = *ehdr;
  add(h);
}

std::string ModuleCollector::add_from_mappings(const std::vector<FileMapping>& files,
                                               const Auxv& auxv) {
  // Instances in address order: each mapping of offset 0 opens one, later mappings of the
  // same file extend the most recent.
  struct Instance {
    std::string path;
    std::optional<uint64_t> base;
    uint64_t start = UINT64_MAX, end = 0;
    bool executable = false;
  };
  std::vector<Instance> instances;
  std::unordered_map<std::string, std::size_t> current;
  for (const FileMapping& f : files) {
    if (f.path.empty() || f.path.front() != '/') continue;  // anonymous, [stack], [vdso]...
    std::string path = strip_deleted(f.path);
    auto it = current.find(path);
    if (f.offset == 0 || it == current.end()) {
      if (instances.size() >= limits_.max_modules) break;
      instances.push_back(Instance{path, std::nullopt, f.start, f.end, f.executable});
      current[path] = instances.size() - 1;
      if (f.offset == 0) instances.back().base = f.start;
      continue;
    }
    Instance& in = instances[it->second];
    in.start = std::min(in.start, f.start);
    in.end = std::max(in.end, f.end);
    in.executable |= f.executable;
  }

  // The executable is the instance holding AT_PHDR (or AT_ENTRY); else the first one.
  std::optional<std::size_t> exe;
  for (uint64_t tag : {kAtPhdr, kAtEntry}) {
    auto v = auxv_value(auxv, tag);
    if (!v || exe) continue;
    for (std::size_t i = 0; i < instances.size(); ++i) {
      if (*v >= instances[i].start && *v < instances[i].end) {
        exe = i;
        break;
      }
    }
  }
  // Data files (locales, caches, shared memory, /dev/zero) are mapped too: only ELF objects
  // are modules. The executable holds AT_PHDR or AT_ENTRY, so it is one by definition.
  std::vector<bool> module(instances.size(), false);
  for (std::size_t i = 0; i < instances.size(); ++i) {
    if (!instances[i].base) continue;  // no header mapped: not a loaded ELF object
    module[i] = (exe && *exe == i) ||
                is_module(instances[i].path, *instances[i].base, instances[i].executable);
  }
  for (std::size_t i = 0; !exe && i < instances.size(); ++i) {
    if (module[i]) exe = i;
  }

  std::string exe_path;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const Instance& in = instances[i];
    if (!module[i]) continue;
    ModuleHint h;
    h.path = in.path;
    h.base = in.base;
    h.range = std::make_pair(in.start, in.end);
    h.range_from_file_mappings = true;
    h.main_executable = exe && *exe == i;
    if (h.main_executable) {
      h.entry = auxv_value(auxv, kAtEntry);
      exe_path = in.path;
    }
    if (covered(*in.base)) continue;
    add(h);
  }
  return exe_path;
}

void ModuleCollector::add_from_link_map(const Auxv& auxv, const std::string& exe_name) {
  ModuleHint h;
  h.path = exe_name;
  h.main_executable = true;
  h.phdr = auxv_value(auxv, kAtPhdr);
  h.phnum = auxv_value(auxv, kAtPhnum).value_or(0);
  h.entry = auxv_value(auxv, kAtEntry);
  h.header_candidates = &header_candidates_;
  const ResolvedModule* exe = add(h);
  if (exe == nullptr) return;
  Module exe_module = exe->module;
  std::optional<TargetElf> exe_elf = exe->elf;
  std::shared_ptr<const Image> exe_file = exe->file;

  // The dynamic section: from the target's program headers, else from the file.
  std::optional<uint64_t> dyn;
  uint64_t dyn_size = 0;
  if (exe_elf && exe_elf->dynamic_vaddr) {
    dyn = *exe_elf->dynamic_vaddr + exe_module.bias;
    dyn_size = exe_elf->dynamic_size;
  } else if (exe_module.image && !exe_module.image->dynamic().empty()) {
    dyn = exe_module.image->dynamic().addr + exe_module.bias;
    dyn_size = exe_module.image->dynamic().bytes.size();
  }
  std::optional<uint64_t> r_debug;
  if (dyn) {
    // Elf64_Dyn / Elf32_Dyn: {tag, value}, one word each.
    const unsigned w = resolver_.address_size();
    uint64_t n = std::min<uint64_t>(dyn_size / (2 * w), kMaxDynamicEntries);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t tag = 0, val = 0;
      if (!mem_.read_uint(*dyn + i * 2 * w, w, big_endian_, tag) ||
          !mem_.read_uint(*dyn + i * 2 * w + w, w, big_endian_, val) || tag == kDtNull) {
        break;
      }
      if (tag == kDtDebug && val != 0) r_debug = val;
    }
  }
  if (r_debug) walk_link_map(*r_debug);

  // The dynamic linker, if the list did not name it (r_debug not dumped, or corrupt).
  auto at_base = auxv_value(auxv, kAtBase);
  if (at_base && *at_base != 0 && !covered(*at_base)) {
    ModuleHint ld;
    ld.base = *at_base;
    if (exe_elf && exe_elf->interp_vaddr && exe_elf->interp_size > 1) {
      std::size_t max = std::min<uint64_t>(exe_elf->interp_size, kMaxPath);
      ld.path = read_c_string(mem_, *exe_elf->interp_vaddr + exe_module.bias, max).value_or("");
      if (ld.path.empty() && exe_elf->page0_alias) {
        ld.path =
            read_c_string(mem_, *exe_elf->page0_alias + exe_elf->interp_offset, max).value_or("");
      }
      if (ld.path.empty() && exe_file) {
        // Even a mismatched executable almost always names the same interpreter; the file
        // found under that name is checked on its own.
        std::vector<std::byte> buf(max);
        std::size_t got = exe_file->read(*exe_elf->interp_vaddr, buf);
        std::string s(reinterpret_cast<const char*>(buf.data()), got);
        if (s.find('\0') != std::string::npos) ld.path = s.substr(0, s.find('\0'));
      }
    }
    if (!ld.path.empty()) add(ld);
  }
}

std::optional<std::pair<uint64_t, uint64_t>> ModuleCollector::mapped_run(uint64_t from,
                                                                         uint64_t through) const {
  auto it = std::upper_bound(
      mapped_.begin(), mapped_.end(), from,
      [](uint64_t a, const std::pair<uint64_t, uint64_t>& r) { return a < r.first; });
  if (it == mapped_.begin()) return std::nullopt;
  --it;
  if (from >= it->second) return std::nullopt;
  uint64_t lo = it->first, hi = it->second;
  while (through >= hi) {
    if (++it == mapped_.end() || it->first != hi) return std::nullopt;
    hi = it->second;
  }
  return std::make_pair(lo, hi);
}

void ModuleCollector::walk_link_map(uint64_t r_debug) {
  const unsigned w = resolver_.address_size();
  uint64_t lm = 0;
  if (!mem_.read_uint(r_debug + kRMapWords * w, w, big_endian_, lm)) return;
  std::set<uint64_t> seen;
  for (uint32_t i = 0; lm != 0 && i < limits_.max_modules; ++i) {
    if (!seen.insert(lm).second) break;  // a cycle
    uint64_t l_addr = 0, l_name = 0, l_ld = 0, l_next = 0;
    if (!mem_.read_uint(lm + kLAddrWords * w, w, big_endian_, l_addr) ||
        !mem_.read_uint(lm + kLNameWords * w, w, big_endian_, l_name) ||
        !mem_.read_uint(lm + kLLdWords * w, w, big_endian_, l_ld) ||
        !mem_.read_uint(lm + kLNextWords * w, w, big_endian_, l_next)) {
      break;
    }
    std::string name;
    if (l_name != 0) name = read_c_string(mem_, l_name, kMaxPath).value_or("");
    // The executable (empty name) and the vDSO (no file) are already known by address.
    if (!name.empty() && !(l_ld != 0 && covered(l_ld))) {
      ModuleHint h;
      h.path = name;
      h.bias = l_addr;
      if (l_ld != 0) h.dynamic = l_ld;
      // A shared object starts at its bias and its text precedes its dynamic section: should
      // neither its headers nor its file be found, the mappings from one to the other are it.
      if (l_ld > l_addr) h.range = mapped_run(l_addr, l_ld);
      add(h);
    }
    lm = l_next;
  }
}

}  // namespace ehbt::core
