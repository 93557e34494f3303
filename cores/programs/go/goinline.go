// SPDX-License-Identifier: Apache-2.0
// Go fixture for source lines and inlined frames: the nil dereference happens in fxInLeaf,
// which the compiler inlines into fxInMid, itself inlined into fxInOuter (kept out of line by
// go:noinline); main calls fxInOuter through fxInWrap, inlined into main. So the faulting pc
// carries two inlined calls and main's return address one. Go's traceback lists the inlined
// frames with their file:line; the line marked `// at:NAME` is where frame NAME stands
// (`go build -gcflags=-m` confirms the inlining).
package main

import "os"

type node struct {
	next *node
	val  int
}

func fxInLeaf(n *node) int {
	return n.next.val // at:leaf
}

func fxInMid(n *node, d int) int {
	return fxInLeaf(n) + d // at:mid
}

//go:noinline
func fxInOuter(n *node) int {
	return fxInMid(n, 3) * 2 // at:outer
}

func fxInWrap(n *node) int {
	return fxInOuter(n) + 1 // at:wrap
}

func main() {
	os.Exit(fxInWrap(&node{})) // at:main
}
