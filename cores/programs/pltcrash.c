// SPDX-License-Identifier: Apache-2.0
/* A crash inside a PLT stub: the page holding getppid's GOT slot is made unreadable, so the
 * stub's load of the slot faults and the signal's pc is in .plt (GDB: getppid@plt). Linked
 * lazily, so the slot lies in .got.plt and the call goes through the stub. */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"

volatile int fx_sink;

/* The address of the main program's GOT slot for `name`, from its PLT relocations. */
static unsigned long fx_got_slot(const char* name) {
  unsigned long bias = 0;
  const ElfW(Dyn)* dyn = _DYNAMIC;
  const ElfW(Rela)* rela = 0;
  const ElfW(Sym)* symtab = 0;
  const char* strtab = 0;
  unsigned long relsz = 0;
  struct link_map* lm = 0;
  extern struct r_debug _r_debug;
  lm = _r_debug.r_map; /* the main program comes first */
  bias = lm->l_addr;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    /* glibc relocates these pointers in place: they are run-time addresses already. */
    if (dyn->d_tag == DT_JMPREL) rela = (const ElfW(Rela)*)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_PLTRELSZ) relsz = dyn->d_un.d_val;
    if (dyn->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym)*)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_STRTAB) strtab = (const char*)dyn->d_un.d_ptr;
  }
  for (unsigned long i = 0; rela && symtab && strtab && i < relsz / sizeof *rela; ++i) {
    const ElfW(Sym)* s = &symtab[ELF64_R_SYM(rela[i].r_info)];
    if (strcmp(strtab + s->st_name, name) == 0) return bias + rela[i].r_offset;
  }
  return 0;
}

FX_NOINLINE void fx_pltcrash_caller(int n) {
  unsigned long slot = fx_got_slot("getppid");
  unsigned long page = slot & ~(unsigned long)(getpagesize() - 1);
  if (slot == 0 || mprotect((void*)page, (size_t)getpagesize(), PROT_NONE) != 0) _exit(3);
  fx_sink = n + (int)getppid(); /* the stub reads the slot: SIGSEGV in getppid@plt */
  FX_KEEP();
}

FX_NOINLINE void fx_pltcrash_outer(int n) {
  fx_pltcrash_caller(n + 1);
  FX_KEEP();
}

int main(void) {
  fx_pltcrash_outer(1);
  return 0;
}
