// SPDX-License-Identifier: Apache-2.0
// cgo fixture: Go calls C, and the C code faults three calls deep (a NULL write in cfun3).
// main.main -> main.level1 -> main.level2 -> (cgo: main._Cfunc_cfun1 -> runtime.cgocall ->
// runtime.asmcgocall, which switches to the thread's g0 stack) -> cfun1 -> cfun2 -> cfun3.
// Go's signal handler makes the fault look like a call of runtime.sigpanic from cfun3, which
// throws ("unexpected signal during runtime execution": the fault is not in Go code); run with
// GOTRACEBACK=crash the runtime then dies of SIGABRT (a core). The C part is in cfuns.c.
package main

/*
#cgo CFLAGS: -O2 -g
#include "cfuns.h"
*/
import "C"
import "os"

//go:noinline
func level2(n int) int { return int(C.cfun1(C.int(n))) + 1 }

//go:noinline
func level1(n int) int { return level2(n+1) * 2 }

func main() { os.Exit(level1(len(os.Args))) }
