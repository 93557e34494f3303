# SPDX-License-Identifier: Apache-2.0
"""Deterministic damage to ELF files for the robustness tests and the fuzz seeds.

Cores: shrink (keep the notes, cut each PT_LOAD's dumped bytes down) and corrupt (note
headers, PT_LOAD offsets, stack bytes zeroed or randomised, truncation). Executables: flip
bytes inside .eh_frame / .eh_frame_hdr. Every corruption takes a random.Random, so a seed
gives the same files on every run.

Run as a script to (re)write the committed fuzz seeds:
    python3 tests/support/corrupt_elf.py seeds
"""

import os
import pathlib
import random
import struct
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

PT_LOAD, PT_NOTE = 1, 4


class Elf:
    """Just enough of an ELF file (64- or 32-bit, either byte order) to find and rewrite
    program headers and sections."""

    def __init__(self, data):
        self.data = bytearray(data)
        if self.data[:4] != b"\x7fELF":
            raise ValueError("not ELF")
        self.is64 = self.data[4] == 2
        self.end = "<" if self.data[5] == 1 else ">"
        if self.is64:
            (self.type, _m, _v, self.entry, self.phoff, self.shoff, _f, _eh, self.phentsize,
             self.phnum, self.shentsize, self.shnum,
             self.shstrndx) = struct.unpack_from(self.end + "HHIQQQIHHHHHH", self.data, 16)
        else:
            (self.type, _m, _v, self.entry, self.phoff, self.shoff, _f, _eh, self.phentsize,
             self.phnum, self.shentsize, self.shnum,
             self.shstrndx) = struct.unpack_from(self.end + "HHIIIIIHHHHHH", self.data, 16)

    # Program headers as dicts; `at` is where the header itself lies in the file.
    def phdrs(self):
        out = []
        for i in range(self.phnum):
            at = self.phoff + i * self.phentsize
            if self.is64:
                t, fl, off, va, pa, fs, ms, al = struct.unpack_from(self.end + "IIQQQQQQ",
                                                                    self.data, at)
            else:
                t, off, va, pa, fs, ms, fl, al = struct.unpack_from(self.end + "IIIIIIII",
                                                                    self.data, at)
            out.append(dict(at=at, type=t, flags=fl, offset=off, vaddr=va, filesz=fs, memsz=ms,
                            align=al))
        return out

    def set_phdr(self, ph):
        if self.is64:
            struct.pack_into(self.end + "IIQQQQQQ", self.data, ph["at"], ph["type"], ph["flags"],
                             ph["offset"], ph["vaddr"], 0, ph["filesz"], ph["memsz"], ph["align"])
        else:
            struct.pack_into(self.end + "IIIIIIII", self.data, ph["at"], ph["type"],
                             ph["offset"], ph["vaddr"], 0, ph["filesz"], ph["memsz"], ph["flags"],
                             ph["align"])

    def sections(self):
        """name -> (offset, size, addr) from the section headers (empty when there are none)."""
        if self.shoff == 0 or self.shnum == 0:
            return {}
        raw = []
        for i in range(self.shnum):
            at = self.shoff + i * self.shentsize
            if self.is64:
                name, _t, _f, addr, off, size = struct.unpack_from(self.end + "IIQQQQ",
                                                                   self.data, at)
            else:
                name, _t, _f, addr, off, size = struct.unpack_from(self.end + "IIIIII",
                                                                   self.data, at)
            raw.append((name, off, size, addr))
        stroff = raw[self.shstrndx][1]
        out = {}
        for name, off, size, addr in raw:
            end = self.data.index(b"\0", stroff + name)
            out[self.data[stroff + name:end].decode()] = (off, size, addr)
        return out


def x86_64_stack_pointers(elf):
    """rsp of every NT_PRSTATUS in an x86-64 core (user_regs_struct rsp is word 19 of pr_reg,
    which starts 112 bytes into elf_prstatus)."""
    sps = []
    for ph in elf.phdrs():
        if ph["type"] != PT_NOTE:
            continue
        pos, end = ph["offset"], ph["offset"] + ph["filesz"]
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf.data, pos)
            desc = pos + 12 + ((namesz + 3) & ~3)
            if ntype == 1 and descsz >= 112 + 27 * 8:
                sps.append(struct.unpack_from("<Q", elf.data, desc + 112 + 19 * 8)[0])
            pos = desc + ((descsz + 3) & ~3)
    return sps


def shrink_core(data, keep_head=4096, keep_stack=16384):
    """A smaller core: each PT_LOAD keeps its first `keep_head` dumped bytes (ELF headers and
    build-id notes of mapped files live there), except a segment holding a thread's stack
    pointer, which keeps `keep_stack` bytes from just below the stack pointer instead. Segment
    data is repacked after the notes; everything not dumped reads as absent."""
    elf = Elf(data)
    sps = x86_64_stack_pointers(elf) if elf.is64 and elf.end == "<" else []
    phdrs = elf.phdrs()
    head_end = max([elf.phoff + elf.phnum * elf.phentsize] +
                   [p["offset"] + p["filesz"] for p in phdrs if p["type"] != PT_LOAD])
    out = bytearray(elf.data[:head_end])
    new = []
    for ph in phdrs:
        if ph["type"] != PT_LOAD or ph["filesz"] == 0:
            new.append(ph)
            continue
        sp = next((s for s in sps if ph["vaddr"] <= s < ph["vaddr"] + ph["memsz"]), None)
        if sp is not None:
            start = max(ph["vaddr"], (sp - 256) & ~0xfff)
            skip = start - ph["vaddr"]
            size = min(ph["filesz"] - skip, keep_stack) if ph["filesz"] > skip else 0
            src = ph["offset"] + skip
            ph = dict(ph, vaddr=start, memsz=ph["memsz"] - skip)
        else:
            size = min(ph["filesz"], keep_head)
            src = ph["offset"]
        chunk = elf.data[src:src + size]
        while len(out) % 16:
            out.append(0)
        ph = dict(ph, offset=len(out), filesz=len(chunk))
        out += chunk
        new.append(ph)
    shrunk = Elf(out)
    for ph in new:
        shrunk.set_phdr(ph)
    # No section headers in a shrunk core.
    struct.pack_into(shrunk.end + ("Q" if shrunk.is64 else "I"), shrunk.data,
                     40 if shrunk.is64 else 32, 0)
    struct.pack_into(shrunk.end + "H", shrunk.data, 60 if shrunk.is64 else 48, 0)
    return bytes(shrunk.data)


def dumped_module_headers(elf):
    """File offsets of the ELF headers of mapped modules that a core dumped (the kernel dumps
    the first page of every mapped ELF file): PT_LOADs whose bytes start with the ELF magic."""
    return [ph["offset"] for ph in elf.phdrs()
            if ph["type"] == PT_LOAD and ph["filesz"] >= 64 and
            elf.data[ph["offset"]:ph["offset"] + 4] == b"\x7fELF"]


def inflate_module_phdrs(data, phnum=0xfffe, phentsize=0xffff):
    """Every dumped module ELF header claims `phnum` program headers of `phentsize` bytes:
    what the fuzzer found (64K x 64K = 4 GiB of program headers claimed by target memory).
    The module files on disk are untouched, so a careful reader still gets every frame."""
    elf = Elf(data)
    for off in dumped_module_headers(elf):
        e = elf.data[off + 5]  # the module's own byte order
        struct.pack_into("<HH" if e == 1 else ">HH", elf.data, off + 54, phentsize, phnum)
    return bytes(elf.data)


def corrupt_core(data, rng, kind):
    """One kind of damage to a core. Kinds: note_header, note_desc, load_offset, load_size,
    stack_zero, stack_random, truncate, phnum, module_phdrs, random_bytes."""
    elf = Elf(data)
    d = elf.data
    phdrs = elf.phdrs()
    notes = [p for p in phdrs if p["type"] == PT_NOTE]
    loads = [p for p in phdrs if p["type"] == PT_LOAD and p["filesz"] > 0]
    if kind == "note_header" and notes:
        n = notes[0]
        # Damage a namesz/descsz/type word of one of the first notes.
        pos = n["offset"] + 4 * rng.randrange(3) + 4 * rng.randrange(min(n["filesz"], 4096) // 4
                                                                        // 3 or 1) * 3
        struct.pack_into("<I", d, pos, rng.choice([0, 0xffffffff, 0x7fffffff, rng.getrandbits(32),
                                                   rng.getrandbits(8)]))
    elif kind == "note_desc" and notes:
        n = notes[0]
        for _ in range(16):
            pos = n["offset"] + rng.randrange(max(n["filesz"], 1))
            if pos < len(d):
                d[pos] = rng.getrandbits(8)
    elif kind == "load_offset" and loads:
        ph = dict(rng.choice(loads))
        ph["offset"] = rng.choice([len(d) - 1, len(d) + 4096, 2**63, ph["offset"] + 1,
                                   rng.getrandbits(40)]) & ((2**64 - 1) if elf.is64 else 0xffffffff)
        elf.set_phdr(ph)
    elif kind == "load_size" and loads:
        ph = dict(rng.choice(loads))
        ph["filesz"] = rng.choice([2**40, ph["filesz"] * 1000, 2**64 - 1]) & \
            ((2**64 - 1) if elf.is64 else 0xffffffff)
        ph["memsz"] = rng.choice([ph["memsz"], 0, 2**63])
        elf.set_phdr(ph)
    elif kind in ("stack_zero", "stack_random") and loads:
        sps = x86_64_stack_pointers(elf) if elf.is64 and elf.end == "<" else []
        seg = next((p for p in loads for s in sps if p["vaddr"] <= s < p["vaddr"] + p["memsz"]),
                   None) or rng.choice(loads)
        base = seg["offset"]
        if sps and seg["vaddr"] <= sps[0] < seg["vaddr"] + seg["filesz"]:
            base += sps[0] - seg["vaddr"]
        span = min(512, seg["offset"] + seg["filesz"] - base)
        for i in range(max(span, 0)):
            if base + i < len(d):
                d[base + i] = 0 if kind == "stack_zero" else rng.getrandbits(8)
    elif kind == "truncate":
        return bytes(d[:rng.choice([0, 1, 16, 63, 64, 100, len(d) // 3, len(d) // 2,
                                    len(d) - 1])])
    elif kind == "module_phdrs":
        return inflate_module_phdrs(data, rng.choice([0xfffe, 0x8000, 1171, 0xffff]),
                                    rng.choice([0xffff, 56, 0x1000]))
    elif kind == "phnum":
        struct.pack_into(elf.end + "H", d, 56 if elf.is64 else 44,
                         rng.choice([0, 1, 0xffff, elf.phnum + 1]))
    else:  # random_bytes
        for _ in range(64):
            d[rng.randrange(len(d))] = rng.getrandbits(8)
    return bytes(d)


CORE_KINDS = ["note_header", "note_desc", "load_offset", "load_size", "stack_zero",
              "stack_random", "truncate", "phnum", "module_phdrs", "random_bytes"]


def corrupt_eh_frame(data, rng, which):
    """Flips bytes in .eh_frame_hdr ('hdr'), .eh_frame ('eh'), or both ('both') of an
    executable with section headers."""
    elf = Elf(data)
    secs = elf.sections()
    names = {"hdr": [".eh_frame_hdr"], "eh": [".eh_frame"],
             "both": [".eh_frame_hdr", ".eh_frame"]}[which]
    d = elf.data
    for name in names:
        if name not in secs:
            continue
        off, size, _ = secs[name]
        for _ in range(rng.choice([1, 4, 32])):
            pos = off + rng.randrange(max(size, 1))
            d[pos] ^= 1 << rng.randrange(8)
    return bytes(d)


# ---- fuzz seeds -----------------------------------------------------------------------------

def _hdr_seed(path, eh_slice=8192, entries=48):
    """fuzz_eh_frame_hdr input: split (2 bytes LE), flags, gap (2 bytes LE, in 16-byte units),
    then a prefix of .eh_frame_hdr whose table keeps only entries naming FDEs inside a prefix
    of .eh_frame, then that prefix. Relative encodings stay valid because the fuzzer places
    .eh_frame gap*16 bytes after the end of the header slice, as in the file."""
    elf = Elf(pathlib.Path(path).read_bytes())
    secs = elf.sections()
    hoff, hsize, haddr = secs[".eh_frame_hdr"]
    eoff, esize, eaddr = secs[".eh_frame"]
    hdr = elf.data[hoff:hoff + hsize]
    end = elf.end
    assert hdr[0] == 1 and hdr[3] == 0x3b, "expects datarel sdata4 table"
    count = struct.unpack_from(end + "I", hdr, 8)[0]
    eh = elf.data[eoff:eoff + min(esize, eh_slice)]
    kept = []
    for i in range(count):
        init, fde = struct.unpack_from(end + "ii", hdr, 12 + 8 * i)
        if eaddr <= haddr + fde < eaddr + len(eh) - 4:
            kept.append((init, fde))
        if len(kept) >= entries:
            break
    new_hdr = bytearray(hdr[:8]) + struct.pack(end + "I", len(kept))
    for init, fde in kept:
        new_hdr += struct.pack(end + "ii", init, fde)
    # Pad so the remaining distance to .eh_frame is a whole number of 16-byte units.
    while (eaddr - haddr - len(new_hdr)) % 16:
        new_hdr.append(0)
    gap = (eaddr - haddr - len(new_hdr)) // 16
    flags = (1 if end == ">" else 0) | (0 if elf.is64 else 2)
    return struct.pack("<HBH", len(new_hdr), flags, gap) + bytes(new_hdr) + bytes(eh)


EXPR_SEEDS = {
    # flags byte, then the expression (DW_OP_* bytes from the DWARF 5 spec, section 7.7.1).
    # x86-64 PLT CFA: rsp+8 + ((rip&15)>=11)<<3
    "plt_cfa": b"\x00" + bytes([0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22]),
    # gcc DRAP: CFA = *(rbp-8); rbp saved at rbp+0
    "drap_cfa": b"\x00" + bytes([0x76, 0x78, 0x06]),
    "drap_rbp": b"\x0c" + bytes([0x76, 0x00]),
    # glibc __restore_rt: CFA = *(rsp+160) (uc_mcontext.rsp), rip at rsp+168
    "restore_rt_cfa": b"\x00" + bytes([0x77, 0xa0, 0x01, 0x06]),
    "restore_rt_rip": b"\x0c" + bytes([0x77, 0xa8, 0x01]),
    # call_frame_cfa, const8u, plus_uconst, deref_size 4
    "cfa_ops": b"\x04" + bytes([0x9c, 0x0e]) + (0x10).to_bytes(8, "little") +
    bytes([0x22, 0x23, 0x08, 0x94, 0x04]),
    # lit1; skip -3: loops until max_expr_steps
    "loop": b"\x00" + bytes([0x31, 0x2f, 0xfd, 0xff]),
    # bregx r7 0; dup; over; rot; swap; pick 2; drop; xderef-free stack shuffles; bra 0
    "stack_ops": b"\x08" + bytes([0x92, 0x07, 0x00, 0x12, 0x14, 0x17, 0x16, 0x15, 0x02, 0x13,
                                   0x30, 0x28, 0x00, 0x00]),
    # big-endian 4-byte: addr 0x7ffd0010; deref; neg; abs; div by lit0
    "be32": b"\x03" + bytes([0x03, 0x7f, 0xfd, 0x00, 0x10, 0x06, 0x1f, 0x19, 0x30, 0x1b]),
}

SMALL_ELF_SRC = r"""
static int depth(int n) { return n <= 0 ? 0 : 1 + depth(n - 1); }
int helper(int x) { return depth(x) * 3; }
void _start(void) { volatile int r = helper(4); (void)r; for (;;) {} }
"""


def _small_elfs(tmp):
    src = tmp / "small.c"
    src.write_text(SMALL_ELF_SRC)
    outs = []
    for cc, name in (("gcc", "x86_64"), ("aarch64-linux-gnu-gcc", "aarch64"),
                     ("s390x-linux-gnu-gcc", "s390x")):
        out = tmp / ("small-" + name)
        r = subprocess.run([cc, "-O1", "-static", "-nostdlib", "-fasynchronous-unwind-tables",
                            "-Wl,--build-id", "-Wl,--eh-frame-hdr", "-o", str(out), str(src)],
                           capture_output=True)
        if r.returncode == 0:
            outs.append(out)
    return outs


def write_seeds(corpus):
    import tempfile
    corpus = pathlib.Path(corpus)
    for t in ("fuzz_eh_frame_hdr", "fuzz_expression", "fuzz_elf_image", "fuzz_core"):
        (corpus / t).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        elfs = _small_elfs(tmp)
        hdr_sources = [pathlib.Path("/lib/x86_64-linux-gnu/libc.so.6"),
                       ROOT / "cores/out/x86_64/bin/chain"] + elfs
        for p in hdr_sources:
            if p.exists():
                (corpus / "fuzz_eh_frame_hdr" / ("hdr-" + p.name.replace(".", "_"))).write_bytes(
                    _hdr_seed(p))
        for name, b in EXPR_SEEDS.items():
            (corpus / "fuzz_expression" / name).write_bytes(b)
        for p in elfs:
            data = p.read_bytes()
            (corpus / "fuzz_elf_image" / p.name).write_bytes(data)
            # The same file without section headers: the program-header path.
            e = Elf(data)
            e.data[40 if e.is64 else 32:48 if e.is64 else 36] = bytes(8 if e.is64 else 4)
            (corpus / "fuzz_elf_image" / (p.name + "-nosh")).write_bytes(bytes(e.data))
    for name in ("chain", "sighandler", "static", "plt"):
        core = ROOT / "cores/out/x86_64" / (name + ".core")
        if core.exists():
            small = shrink_core(core.read_bytes())
            if len(small) >= 256 * 1024:  # e.g. a gcore with large notes: not a seed
                continue
            (corpus / "fuzz_core" / ("x86_64-" + name)).write_bytes(small)


if __name__ == "__main__":
    if sys.argv[1:] == ["seeds"]:
        write_seeds(ROOT / "tests/fuzz/corpus")
    else:
        sys.exit("usage: corrupt_elf.py seeds")
