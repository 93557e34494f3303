// SPDX-License-Identifier: Apache-2.0
// The one-shot commands' heap. A run touches a few hundred KiB to a few MiB of fresh heap, and
// each first touch of a 4 KiB page is a page fault: about 12 us each in a virtual machine,
// more than the whole walk of a small core. Backed by a transparent huge page (where the
// kernel allows them: /sys/kernel/mm/transparent_hugepage/enabled "always" or "madvise"), the
// heap costs one fault and one 2 MiB clear. EHBT_NO_HUGE_HEAP=1 leaves malloc as it is.
#pragma once

namespace ehbt::cli {

// Call first thing in main, before anything allocates much.
void prepare_heap();

}  // namespace ehbt::cli
