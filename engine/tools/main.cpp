// ehbt command-line entry point (subcommands are dispatched from here).
#include <cstdio>
int main() {
  std::fprintf(stderr, "ehbt: not built yet\n");
  return 2;
}
