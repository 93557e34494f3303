// SPDX-License-Identifier: Apache-2.0
// Images (ELF files in their link-time address space) and modules (images placed in a target).
#include <pybind11/stl.h>

#include <algorithm>
#include <limits>

#include "bindings.hpp"
#include "py_memory.hpp"

namespace ehbt::py {

namespace {

using ImagePtr = std::shared_ptr<Image>;

ImagePtr mutable_image(const std::shared_ptr<const Image>& image) {
  return std::const_pointer_cast<Image>(image);
}

ImagePtr image_or_raise(Expected<std::shared_ptr<Image>, std::string> result) {
  if (!result) throw EhbtError(result.error());
  return std::move(result).value();
}

// [lowest PT_LOAD start, highest PT_LOAD end) in link-time addresses; (0, 0) without segments.
std::pair<uint64_t, uint64_t> image_extent(const Image& image) {
  uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  for (const Segment& s : image.segments()) {
    lo = std::min(lo, s.vaddr);
    hi = std::max(hi, s.vaddr + s.memsz);
  }
  if (hi == 0) return {0, 0};
  return {std::min(lo, image.min_vaddr()), hi};
}

pyb::object section_tuple(const SectionRef& s) {
  if (s.empty()) return pyb::none();
  return pyb::make_tuple(s.addr, s.bytes.size());
}

pyb::dict sections(const Image& image) {
  pyb::dict out;
  const std::pair<const char*, SectionRef> all[] = {
      {".eh_frame_hdr", image.eh_frame_hdr()}, {".eh_frame", image.eh_frame()},
      {".debug_frame", image.debug_frame()},   {".sframe", image.sframe()},
      {".dynamic", image.dynamic()},
  };
  for (const auto& [name, ref] : all) {
    if (!ref.empty()) out[name] = section_tuple(ref);
  }
  return out;
}

pyb::bytes section_bytes(const Image& image, const std::string& name) {
  SectionRef ref;
  if (name == ".eh_frame_hdr")
    ref = image.eh_frame_hdr();
  else if (name == ".eh_frame")
    ref = image.eh_frame();
  else if (name == ".debug_frame")
    ref = image.debug_frame();
  else if (name == ".sframe")
    ref = image.sframe();
  else if (name == ".dynamic")
    ref = image.dynamic();
  else
    throw pyb::key_error(name);
  return pyb::bytes(reinterpret_cast<const char*>(ref.bytes.data()), ref.bytes.size());
}

std::string module_repr(const Module& m) {
  return "Module(" + m.path + ", bias=" + hex(m.bias) + ", " + hex(m.start) + "-" + hex(m.end) +
         (m.image ? "" : ", no image") + ")";
}

}  // namespace

std::shared_ptr<Module> module_view(const std::shared_ptr<const void>& owner, const Module* m) {
  if (m == nullptr) return nullptr;
  return std::shared_ptr<Module>(owner, const_cast<Module*>(m));
}

void bind_image(pyb::module_& m) {
  pyb::class_<Segment>(m, "Segment", "A PT_LOAD segment, in link-time addresses.")
      .def_readonly("vaddr", &Segment::vaddr)
      .def_readonly("memsz", &Segment::memsz)
      .def_readonly("offset", &Segment::offset)
      .def_readonly("filesz", &Segment::filesz)
      .def_readonly("flags", &Segment::flags)
      .def("__repr__", [](const Segment& s) {
        return "Segment(vaddr=" + hex(s.vaddr) + ", memsz=" + hex(s.memsz) +
               ", flags=" + std::to_string(s.flags) + ")";
      });

  pyb::class_<Symbol>(m, "Symbol", "A function symbol, link-time start and size.")
      .def_readonly("name", &Symbol::name)
      .def_readonly("start", &Symbol::start)
      .def_readonly("size", &Symbol::size)
      .def("__repr__", [](const Symbol& s) {
        return "Symbol(" + s.name + ", " + hex(s.start) + ", size=" + std::to_string(s.size) + ")";
      });

  pyb::class_<Image, ImagePtr>(m, "Image", "An ELF object in its own link-time address space.")
      .def_static(
          "open",
          [](const std::string& path, const pyb::handle& limits) {
            Limits l = limits_from_py(limits);
            Expected<std::shared_ptr<Image>, std::string> r = unexpected(std::string());
            {
              pyb::gil_scoped_release nogil;
              r = Image::open(path, l);
            }
            return image_or_raise(std::move(r));
          },
          pyb::arg("path"), pyb::arg("limits") = pyb::none(),
          "Opens an ELF file (mapped read-only). Raises ehbt.Error when unusable.")
      .def_static(
          "from_bytes",
          [](const pyb::bytes& data, const std::string& name, const pyb::handle& limits) {
            std::string_view v = data;
            std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(v.data()),
                                         reinterpret_cast<const std::byte*>(v.data()) + v.size());
            return image_or_raise(
                Image::from_bytes(std::move(bytes), name, limits_from_py(limits)));
          },
          pyb::arg("data"), pyb::arg("name") = "", pyb::arg("limits") = pyb::none())
      .def_static(
          "from_memory",
          [](const pyb::handle& memory, uint64_t load_addr, const std::string& name,
             const pyb::handle& limits) {
            Limits l = limits_from_py(limits);
            MemoryArg mem(memory, /*cache_pages=*/true);
            Expected<std::shared_ptr<Image>, std::string> r = unexpected(std::string());
            {
              auto lock = mem.lock();
              if (mem.needs_gil()) {
                r = Image::from_memory(mem.get(), load_addr, name, l);
              } else {
                pyb::gil_scoped_release nogil;
                r = Image::from_memory(mem.get(), load_addr, name, l);
              }
            }
            mem.rethrow_interrupt();
            return image_or_raise(std::move(r));
          },
          pyb::arg("memory"), pyb::arg("load_addr"), pyb::arg("name") = "",
          pyb::arg("limits") = pyb::none(),
          "An image rebuilt from target memory, from the ELF header mapped at load_addr.")
      .def_property_readonly("name", &Image::name)
      .def_property_readonly("build_id", &Image::build_id)
      // The separate debug file, or None: a target that resolved this image left its lookup
      // to the first user (Image::debug_file), which this is.
      .def_property_readonly("debug_file",
                             [](const Image& i) -> std::optional<std::string> {
                               auto d = i.debug_file();
                               if (!d) return std::nullopt;
                               return d->name();
                             })
      .def_property_readonly("arch", &Image::arch)
      .def_property_readonly("big_endian", &Image::big_endian)
      .def_property_readonly("address_size", &Image::address_size)
      .def_property_readonly("elf_type", &Image::elf_type)
      .def_property_readonly("entry", &Image::entry)
      .def_property_readonly("min_vaddr", &Image::min_vaddr)
      .def_property_readonly("segments", &Image::segments)
      .def_property_readonly("extent", &image_extent,
                             "(start, end) of the PT_LOAD segments, link-time.")
      .def_property_readonly("sections", &sections,
                             "{name: (link address, size)} of the unwind-related sections found.")
      .def("section_bytes", &section_bytes, pyb::arg("name"))
      .def("is_executable", &Image::is_executable, pyb::arg("link_addr"))
      .def(
          "read",
          [](const Image& image, uint64_t link_addr, std::size_t size) {
            CallbackMemory mem(
                [&image](uint64_t a, std::span<std::byte> out) { return image.read(a, out); });
            std::vector<std::byte> buf =
                read_prefix(mem, link_addr, std::min<std::size_t>(size, 1u << 30));
            return pyb::bytes(reinterpret_cast<const char*>(buf.data()), buf.size());
          },
          pyb::arg("link_addr"), pyb::arg("size"))
      .def(
          "symbolize",
          [](const Image& image, uint64_t link_addr) { return image.symbolize(link_addr); },
          pyb::arg("link_addr"), "The symbol covering a link-time address, or None.")
      .def("__repr__", [](const Image& i) { return "Image(" + i.name() + ")"; });

  pyb::class_<Module, std::shared_ptr<Module>>(m, "Module", "An image as mapped in one target.")
      .def(pyb::init([](std::optional<ImagePtr> image, const std::string& path, uint64_t bias,
                        std::optional<uint64_t> start, std::optional<uint64_t> end,
                        std::optional<bool> build_id_match, std::optional<std::string> file,
                        std::optional<std::string> build_id) {
             auto mod = std::make_shared<Module>();
             mod->image = image.value_or(nullptr);
             mod->path = path;
             mod->bias = bias;
             // Without an explicit range, the image's PT_LOAD extent placed at the bias.
             auto [lo, hi] =
                 mod->image ? image_extent(*mod->image) : std::pair<uint64_t, uint64_t>{};
             mod->start = start.value_or(lo + bias);
             mod->end = end.value_or(hi + bias);
             mod->build_id_match = build_id_match;
             mod->file = file.value_or(mod->image ? mod->image->name() : std::string());
             mod->build_id = build_id.value_or(mod->image ? mod->image->build_id() : std::string());
             if (mod->path.empty()) mod->path = mod->file;
             return mod;
           }),
           pyb::arg("image") = pyb::none(), pyb::arg("path") = "", pyb::arg("bias") = 0,
           pyb::arg("start") = pyb::none(), pyb::arg("end") = pyb::none(),
           pyb::arg("build_id_match") = true, pyb::arg("file") = pyb::none(),
           pyb::arg("build_id") = pyb::none())
      .def_property(
          "image", [](const Module& mod) { return mutable_image(mod.image); },
          [](Module& mod, std::optional<ImagePtr> image) { mod.image = image.value_or(nullptr); })
      .def_readwrite("path", &Module::path)
      .def_readwrite("bias", &Module::bias)
      .def_readwrite("start", &Module::start)
      .def_readwrite("end", &Module::end)
      .def_readwrite("build_id_match", &Module::build_id_match,
                     "True/False: the file's build-id is/is not the recorded one; None: a "
                     "build-id is unknown on either side (or no file was found).")
      .def_readwrite("missing", &Module::missing,
                     "Why no file backs the module ('libc.so.6 not found (named by the core)'); "
                     "'' when one does.")
      .def_readwrite("file", &Module::file)
      .def_readwrite("build_id", &Module::build_id)
      .def("to_link", &Module::to_link, pyb::arg("addr"))
      .def("contains", &Module::contains, pyb::arg("addr"))
      .def("__repr__", &module_repr);

  pyb::class_<ModuleSet, std::shared_ptr<ModuleSet>>(m, "ModuleSet",
                                                     "The modules of one target, by address.")
      .def(pyb::init([](const std::vector<std::shared_ptr<Module>>& modules) {
             auto set = std::make_shared<ModuleSet>();
             for (const auto& mod : modules) {
               if (mod) set->add(*mod);
             }
             return set;
           }),
           pyb::arg("modules") = std::vector<std::shared_ptr<Module>>{})
      .def(
          "add", [](ModuleSet& set, const Module& mod) { set.add(mod); }, pyb::arg("module"))
      .def_property_readonly("anonymous_code",
                             [](const ModuleSet& set) { return set.anonymous_code(); })
      .def(
          "add_anonymous_code",
          [](ModuleSet& set, uint64_t start, uint64_t end) { set.add_anonymous_code(start, end); },
          pyb::arg("start"), pyb::arg("end"),
          "Executable memory no file backs (JIT code), walked as a target's JIT code is.")
      .def(
          "add_jit_code_of",
          [](ModuleSet& set, const ModuleSet& other) {
            for (const auto& [start, end] : other.anonymous_code())
              set.add_anonymous_code(start, end);
            if (other.perf_map()) set.set_perf_map(other.perf_map());
          },
          pyb::arg("other"),
          "Takes another set's JIT code and perf map (a debugger plugin's set, from the "
          "engine's target of the same core: what a walk needs to tell and name JIT frames).")
      .def(
          "add_process_jit_code",
          [](ModuleSet& set, int pid, const std::string& perf_map, const pyb::handle& limits) {
            return add_process_jit_code(set, pid, perf_map, limits_from_py(limits));
          },
          pyb::arg("pid"), pyb::arg("perf_map") = "", pyb::arg("limits") = pyb::none(),
          "Takes the JIT code of a live process on this machine that a debugger holds (so no\n"
          "attach_process): its executable mappings no file backs (/proc/PID/maps) and the\n"
          "perf map naming them (perf_map, else /tmp/perf-PID.map when it exists), as\n"
          "attach_process does for its target. Returns the Warnings a target would record\n"
          "(a perf_map named but unreadable).")
      // Copies: a later add() may move the set's storage, so no view into it is handed out.
      .def(
          "find",
          [](const ModuleSet& set, uint64_t addr) -> std::optional<Module> {
            const Module* mod = set.find(addr);
            if (mod == nullptr) return std::nullopt;
            return *mod;
          },
          pyb::arg("addr"))
      .def_property_readonly("modules", [](const ModuleSet& set) { return set.modules(); })
      .def("__len__", [](const ModuleSet& set) { return set.modules().size(); })
      .def("__iter__", [](const ModuleSet& set) { return pyb::iter(pyb::cast(set.modules())); })
      .def("__repr__", [](const ModuleSet& set) {
        return "ModuleSet(" + std::to_string(set.modules().size()) + " modules)";
      });
}

}  // namespace ehbt::py
