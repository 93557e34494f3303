// SPDX-License-Identifier: Apache-2.0
// Arch, ArchInfo, Limits and RegisterSet: the value types every other binding uses.
#include <pybind11/stl.h>

#include <cinttypes>
#include <cstdio>
#include <utility>

#include "bindings.hpp"
#include "ehbt/registers.hpp"
#include "ehbt/report.hpp"

namespace ehbt::py {

namespace {

// Limits fields by name, so that Limits(max_frames=10) and dicts of fields both work.
struct LimitField32 {
  const char* name;
  uint32_t Limits::*member;
};
struct LimitField64 {
  const char* name;
  uint64_t Limits::*member;
};
constexpr LimitField32 kLimit32[] = {
    {"max_frames", &Limits::max_frames},
    {"max_cfi_instructions", &Limits::max_cfi_instructions},
    {"max_remember_depth", &Limits::max_remember_depth},
    {"max_rules", &Limits::max_rules},
    {"max_expr_steps", &Limits::max_expr_steps},
    {"max_expr_stack", &Limits::max_expr_stack},
    {"max_expr_bytes", &Limits::max_expr_bytes},
    {"max_index_entries", &Limits::max_index_entries},
    {"max_search_probes", &Limits::max_search_probes},
    {"max_symbols", &Limits::max_symbols},
    {"max_modules", &Limits::max_modules},
    {"max_prologue_scan", &Limits::max_prologue_scan},
    {"max_prologue_insns", &Limits::max_prologue_insns},
    {"max_sframe_fres", &Limits::max_sframe_fres},
    {"max_program_headers", &Limits::max_program_headers},
    {"max_threads", &Limits::max_threads},
    {"max_file_mappings", &Limits::max_file_mappings},
    {"max_perf_map_entries", &Limits::max_perf_map_entries},
    {"max_code_regions", &Limits::max_code_regions},
    {"max_scan_words", &Limits::max_scan_words},
    {"max_scan_frames", &Limits::max_scan_frames},
    {"max_cached_pages", &Limits::max_cached_pages},
    {"max_content_key_extents", &Limits::max_content_key_extents},
    {"max_stored_images", &Limits::max_stored_images},
};
constexpr LimitField64 kLimit64[] = {
    {"max_record_bytes", &Limits::max_record_bytes},
    {"max_image_bytes", &Limits::max_image_bytes},
    {"max_decompressed_bytes", &Limits::max_decompressed_bytes},
    {"max_decompressed_disk_bytes", &Limits::max_decompressed_disk_bytes},
    {"max_decompressor_memory", &Limits::max_decompressor_memory},
    {"max_perf_map_bytes", &Limits::max_perf_map_bytes},
    {"max_stored_image_bytes", &Limits::max_stored_image_bytes},
    {"max_debug_cache_bytes", &Limits::max_debug_cache_bytes},
    {"max_line_answers_bytes", &Limits::max_line_answers_bytes},
};

void apply_limit_fields(Limits& limits, const pyb::dict& fields) {
  for (auto [key, value] : fields) {
    std::string name = pyb::str(key);
    bool found = false;
    for (const auto& f : kLimit32) {
      if (name == f.name) {
        limits.*f.member = value.cast<uint32_t>();
        found = true;
      }
    }
    for (const auto& f : kLimit64) {
      if (name == f.name) {
        limits.*f.member = value.cast<uint64_t>();
        found = true;
      }
    }
    if (!found) throw pyb::type_error("Limits has no field '" + name + "'");
  }
}

uint16_t reg_number(int64_t reg) {
  if (reg < 0 || reg >= kMaxRegs) {
    throw pyb::key_error("DWARF register number out of range: " + std::to_string(reg));
  }
  return static_cast<uint16_t>(reg);
}

pyb::list valid_registers(const RegisterSet& regs) {
  pyb::list out;
  for (uint16_t r = 0; r < kMaxRegs; ++r) {
    if (regs.has(r)) out.append(r);
  }
  return out;
}

void fill_registers(RegisterSet& regs, const pyb::handle& values) {
  if (values.is_none()) return;
  for (auto [key, value] : values.cast<pyb::dict>()) {
    regs.set(reg_number(key.cast<int64_t>()), value.cast<uint64_t>());
  }
}

}  // namespace

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

Arch arch_from_py(const pyb::handle& obj) {
  if (pyb::isinstance<pyb::str>(obj)) {
    std::string name = obj.cast<std::string>();
    if (auto a = report::arch_from_alias(name)) return *a;
    throw pyb::value_error("unknown architecture '" + name + "'");
  }
  return obj.cast<Arch>();
}

Limits limits_from_py(const pyb::handle& obj, const Limits& fallback) {
  if (obj.is_none()) return fallback;
  if (pyb::isinstance<pyb::dict>(obj)) {
    Limits limits = fallback;
    apply_limit_fields(limits, obj.cast<pyb::dict>());
    return limits;
  }
  return obj.cast<Limits>();
}

void bind_basics(pyb::module_& m) {
  pyb::enum_<Arch> arch(m, "Arch", "An architecture the engine unwinds.");
  arch.value("X86_64", Arch::X86_64)
      .value("AARCH64", Arch::AArch64)
      .value("S390X", Arch::S390x)
      .value("I386", Arch::I386)
      .def_static(
          "from_name",
          [](const std::string& name) {
            auto a = report::arch_from_alias(name);
            if (!a) throw pyb::value_error("unknown architecture '" + name + "'");
            return *a;
          },
          "Arch for a name: 'x86_64', 'aarch64', 's390x', 'i386', and as debuggers and triples "
          "spell them: 'amd64', 'x86-64', 'i386:x86-64' (GDB), 'arm64', 's390:64-bit' (GDB), "
          "'i686', 'i386:intel', 'x86_64-pc-linux-gnu'. ValueError when unknown.")
      .def_static(
          "from_elf_machine",
          [](uint16_t machine) -> std::optional<Arch> { return arch_from_elf_machine(machine); },
          "Arch for an ELF e_machine value, or None.")
      .def_property_readonly("info", [](Arch a) { return arch_info(a); });
  // str(Arch.X86_64) == "x86_64": the name the JSON format and the CLI use. Assigned rather
  // than def()'d, which would only add an overload behind enum_'s own __str__.
  arch.attr("__str__") = pyb::cpp_function([](Arch a) { return std::string(arch_info(a).name); },
                                           pyb::name("__str__"), pyb::is_method(arch));

  pyb::class_<ArchInfo>(m, "ArchInfo", "Facts about an architecture (DWARF register roles).")
      .def_property_readonly("arch", [](const ArchInfo& i) { return i.arch; })
      .def_property_readonly("name", [](const ArchInfo& i) { return std::string(i.name); })
      .def_readonly("elf_machine", &ArchInfo::elf_machine)
      .def_readonly("big_endian", &ArchInfo::big_endian)
      .def_readonly("address_size", &ArchInfo::address_size)
      .def_readonly("sp_reg", &ArchInfo::sp_reg)
      .def_readonly("fp_reg", &ArchInfo::fp_reg)
      .def_readonly("ra_reg", &ArchInfo::ra_reg)
      .def_readonly("num_regs", &ArchInfo::num_regs)
      .def_readonly("cfa_sp_offset", &ArchInfo::cfa_sp_offset)
      .def_readonly("stack_align", &ArchInfo::stack_align);

  pyb::class_<Limits> limits(m, "Limits", "Caps on every loop of the engine.");
  limits.def(pyb::init([](const pyb::kwargs& kw) {
               Limits l;
               apply_limit_fields(l, kw);
               return l;
             }),
             "Limits(max_frames=..., ...): defaults for every field not given.");
  for (const auto& f : kLimit32) limits.def_readwrite(f.name, f.member);
  for (const auto& f : kLimit64) limits.def_readwrite(f.name, f.member);
  limits.def("__repr__", [](const Limits& l) {
    return "Limits(max_frames=" + std::to_string(l.max_frames) + ", ...)";
  });

  pyb::class_<RegisterSet>(m, "RegisterSet",
                           "Registers by DWARF number (dict-like), plus pc and sp.")
      .def(pyb::init([](const pyb::handle& a, const pyb::handle& regs, std::optional<uint64_t> pc,
                        std::optional<uint64_t> sp) {
             RegisterSet r(arch_from_py(a));
             fill_registers(r, regs);
             if (pc) r.set_pc(*pc);
             if (sp) r.set_sp(*sp);
             return r;
           }),
           pyb::arg("arch"), pyb::arg("regs") = pyb::none(), pyb::arg("pc") = pyb::none(),
           pyb::arg("sp") = pyb::none())
      .def_property_readonly("arch", &RegisterSet::arch)
      .def_property("pc", &RegisterSet::pc, &RegisterSet::set_pc)
      .def_property(
          "sp",
          [](const RegisterSet& r) -> std::optional<uint64_t> {
            return r.get(arch_info(r.arch()).sp_reg);
          },
          &RegisterSet::set_sp)
      .def("__getitem__",
           [](const RegisterSet& r, int64_t reg) {
             auto v = r.get(reg_number(reg));
             if (!v) throw pyb::key_error(std::to_string(reg));
             return *v;
           })
      .def("__setitem__",
           [](RegisterSet& r, int64_t reg, uint64_t value) { r.set(reg_number(reg), value); })
      .def("__delitem__",
           [](RegisterSet& r, int64_t reg) {
             uint16_t n = reg_number(reg);
             if (!r.has(n)) throw pyb::key_error(std::to_string(reg));
             r.clear(n);
           })
      .def("__contains__", [](const RegisterSet& r,
                              int64_t reg) { return reg >= 0 && reg < kMaxRegs && r.has(reg); })
      .def("__len__", &RegisterSet::count)
      .def("__iter__", [](const RegisterSet& r) { return pyb::iter(valid_registers(r)); })
      .def("keys", &valid_registers)
      .def("items",
           [](const RegisterSet& r) {
             pyb::list out;
             for (uint16_t n = 0; n < kMaxRegs; ++n) {
               if (r.has(n)) out.append(pyb::make_tuple(n, r.raw(n)));
             }
             return out;
           })
      .def(
          "get",
          [](const RegisterSet& r, int64_t reg, pyb::object fallback) -> pyb::object {
            if (reg < 0 || reg >= kMaxRegs || !r.has(reg)) return fallback;
            return pyb::int_(r.raw(reg));
          },
          pyb::arg("reg"), pyb::arg("default") = pyb::none())
      .def("to_dict",
           [](const RegisterSet& r) {
             pyb::dict out;
             for (uint16_t n = 0; n < kMaxRegs; ++n) {
               if (r.has(n)) out[pyb::int_(n)] = pyb::int_(r.raw(n));
             }
             return out;
           })
      .def("copy", [](const RegisterSet& r) { return r; })
      .def("__repr__", [](const RegisterSet& r) {
        std::string s =
            "RegisterSet(" + std::string(arch_info(r.arch()).name) + ", pc=" + hex(r.pc());
        for (uint16_t n = 0; n < kMaxRegs; ++n) {
          if (r.has(n)) s += ", " + std::to_string(n) + ": " + hex(r.raw(n));
        }
        return s + ")";
      });
}

}  // namespace ehbt::py
