// SPDX-License-Identifier: Apache-2.0
// The floor for `ehbt core`: a program that does nothing but the data access a walk cannot
// avoid. It maps each file named in a page list (the core and the modules) and touches one
// byte of every listed page, then prints a checksum so the reads cannot be optimised away.
// bench/compare_core_tools.py writes the list from what the walk read: the core's headers
// and notes, the stack pages between each thread's frames, and per frame the .eh_frame_hdr
// search path and the FDE page in the module.
//
//   core_floor LIST      LIST: lines "PATH OFFSET" (decimal byte offset into PATH)
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { kMaxFiles = 256 };

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
  char path[4096];
  unsigned long long offset;
  unsigned sum = 0, pages = 0;
  while (fscanf(list, "%4095s %llu", path, &offset) == 2) {
    const struct Mapped* m = map_file(path);
    if (m == NULL || offset >= m->size) continue;
    sum += m->base[offset];
    ++pages;
  }
  fclose(list);
  printf("%u pages, checksum %u\n", pages, sum);
  return 0;
}
