// SPDX-License-Identifier: Apache-2.0
// The floor for `ehbt core`: a program that does nothing but the data access a walk cannot
// avoid. It maps each file named in a page list (the core and the modules) and touches one
// byte of every listed page, then prints a checksum so the reads cannot be optimised away.
// bench/compare_core_tools.py writes the list from what the walk read: the core's headers
// and notes, the stack pages between each thread's frames, and per frame the .eh_frame_hdr
// search path and the FDE page in the module.
//
// The symbol floor (issue #31: a floor that names nothing cannot be the bar for a tool that
// must name frames) adds, per module with named frames, what naming them cannot avoid: one
// pass over the module's symbol table (.symtab, else .dynsym: the order ehbt looks in; ELF
// symbol tables are not sorted, so without an index built beforehand a lookup is a scan)
// finding the function symbol that covers each of the module's pcs, and reading its name.
//
//   core_floor LIST      LIST: lines "PATH OFFSET" (decimal byte offset into PATH) and, for
//                        the symbol floor, "=sym PATH ADDR" (a link-time address in PATH)
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { kMaxFiles = 256, kMaxLookups = 1 << 16 };

struct Mapped {
  char path[4096];
  const unsigned char* base;
  size_t size;
};

static struct Mapped files[kMaxFiles];
static int nfiles;

static const struct Mapped* map_file(const char* path) {
  for (int i = 0; i < nfiles; ++i) {
    if (strcmp(files[i].path, path) == 0) return &files[i];
  }
  if (nfiles == kMaxFiles) return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    close(fd);
    return NULL;
  }
  void* p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return NULL;
  struct Mapped* m = &files[nfiles++];
  snprintf(m->path, sizeof m->path, "%s", path);
  m->base = p;
  m->size = (size_t)st.st_size;
  return m;
}

// A symbol lookup: the address, its file, and the name found (NULL: none).
struct Lookup {
  const struct Mapped* file;
  uint64_t addr;
  const char* name;
};

static struct Lookup lookups[kMaxLookups];
static int nlookups;

// The section of type `type` (SHT_SYMTAB, SHT_DYNSYM) of a little-endian ELF64 file, or NULL.
static const Elf64_Shdr* find_section(const struct Mapped* m, uint32_t type) {
  if (m->size < sizeof(Elf64_Ehdr) || memcmp(m->base, ELFMAG, SELFMAG) != 0 ||
      m->base[EI_CLASS] != ELFCLASS64)
    return NULL;
  const Elf64_Ehdr* eh = (const Elf64_Ehdr*)m->base;
  if (eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > m->size)
    return NULL;
  const Elf64_Shdr* sh = (const Elf64_Shdr*)(m->base + eh->e_shoff);
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type == type && sh[i].sh_link < eh->e_shnum &&
        sh[i].sh_offset + sh[i].sh_size <= m->size)
      return &sh[i];
  }
  return NULL;
}

static int by_file_then_addr(const void* a, const void* b) {
  const struct Lookup* x = a;
  const struct Lookup* y = b;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

// One pass over the file's symbol table answers its lookups `first[0..n)` (sorted by address):
// each function symbol finds the lookups it covers by a binary search.
static void resolve_file(const struct Mapped* m, struct Lookup* first, size_t n) {
  const Elf64_Shdr* tab = find_section(m, SHT_SYMTAB);
  if (tab == NULL) tab = find_section(m, SHT_DYNSYM);
  if (tab == NULL) return;
  const Elf64_Ehdr* eh = (const Elf64_Ehdr*)m->base;
  const Elf64_Shdr* strtab = (const Elf64_Shdr*)(m->base + eh->e_shoff) + tab->sh_link;
  const Elf64_Sym* syms = (const Elf64_Sym*)(m->base + tab->sh_offset);
  size_t count = tab->sh_size / sizeof(Elf64_Sym);
  for (size_t i = 0; i < count; ++i) {
    const Elf64_Sym* s = &syms[i];
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_size == 0 || s->st_shndx == SHN_UNDEF ||
        s->st_name >= strtab->sh_size)
      continue;
    size_t lo = 0, hi = n;  // first lookup at or above the symbol's start
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (first[mid].addr < s->st_value)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (size_t j = lo; j < n && first[j].addr - s->st_value < s->st_size; ++j) {
      if (first[j].name == NULL)
        first[j].name = (const char*)m->base + strtab->sh_offset + s->st_name;
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: core_floor LIST\n");
    return 2;
  }
  FILE* list = fopen(argv[1], "r");
  if (list == NULL) {
    perror(argv[1]);
    return 2;
  }
  char line[8192], path[4096];
  unsigned long long offset;
  unsigned sum = 0, pages = 0;
  while (fgets(line, sizeof line, list) != NULL) {
    if (sscanf(line, "=sym %4095s %llu", path, &offset) == 2) {
      const struct Mapped* m = map_file(path);
      if (m != NULL && nlookups < kMaxLookups) lookups[nlookups++] = (struct Lookup){m, offset, 0};
      continue;
    }
    if (sscanf(line, "%4095s %llu", path, &offset) != 2) continue;
    const struct Mapped* m = map_file(path);
    if (m == NULL || offset >= m->size) continue;
    sum += m->base[offset];
    ++pages;
  }
  fclose(list);
  qsort(lookups, (size_t)nlookups, sizeof lookups[0], by_file_then_addr);
  for (int i = 0, j; i < nlookups; i = j) {
    for (j = i; j < nlookups && lookups[j].file == lookups[i].file; ++j) {
    }
    resolve_file(lookups[i].file, &lookups[i], (size_t)(j - i));
  }
  unsigned named = 0;
  for (int i = 0; i < nlookups; ++i) {
    if (lookups[i].name == NULL) continue;
    ++named;
    sum += (unsigned)strlen(lookups[i].name);
  }
  if (nlookups)
    printf("%u pages, %u/%d frames named, checksum %u\n", pages, named, nlookups, sum);
  else
    printf("%u pages, checksum %u\n", pages, sum);
  return 0;
}
