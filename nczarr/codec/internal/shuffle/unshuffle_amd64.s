#include "textflag.h"

// The byte unshuffles of 2-, 4- and 8-byte elements with SSE2, which every
// amd64 processor has: 16 elements an iteration. Plane k (byte k of every
// element) starts at src + k*count. Each step interleaves two registers'
// bytes, then words, then double words (PUNPCKL/H: the low or high halves),
// which turns planes into elements.

// func unshuffle2x16(dst, src *byte, count, blocks int)
TEXT ·unshuffle2x16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ count+16(FP), DX
	MOVQ blocks+24(FP), CX
	TESTQ CX, CX
	JZ done2

loop2:
	MOVOU (SI), X0
	MOVOU (SI)(DX*1), X1
	MOVO X0, X2
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X2
	MOVOU X0, (DI)
	MOVOU X2, 16(DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop2

done2:
	RET

// func unshuffle4x16(dst, src *byte, count, blocks int)
TEXT ·unshuffle4x16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ count+16(FP), DX
	MOVQ blocks+24(FP), CX
	TESTQ CX, CX
	JZ done4
	LEAQ (DX)(DX*2), R8 // 3*count

loop4:
	MOVOU (SI), X0
	MOVOU (SI)(DX*1), X1
	MOVOU (SI)(DX*2), X2
	MOVOU (SI)(R8*1), X3
	MOVO X0, X4
	PUNPCKLBW X1, X0 // elements 0-7, bytes 0 and 1
	PUNPCKHBW X1, X4 // elements 8-15, bytes 0 and 1
	MOVO X2, X5
	PUNPCKLBW X3, X2 // elements 0-7, bytes 2 and 3
	PUNPCKHBW X3, X5 // elements 8-15, bytes 2 and 3
	MOVO X0, X6
	PUNPCKLWL X2, X0 // elements 0-3
	PUNPCKHWL X2, X6 // elements 4-7
	MOVO X4, X7
	PUNPCKLWL X5, X4 // elements 8-11
	PUNPCKHWL X5, X7 // elements 12-15
	MOVOU X0, (DI)
	MOVOU X6, 16(DI)
	MOVOU X4, 32(DI)
	MOVOU X7, 48(DI)
	ADDQ $16, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop4

done4:
	RET

// func unshuffle8x16(dst, src *byte, count, blocks int)
TEXT ·unshuffle8x16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ count+16(FP), DX
	MOVQ blocks+24(FP), CX
	TESTQ CX, CX
	JZ done8
	LEAQ (DX)(DX*2), R8 // 3*count
	LEAQ (DX)(DX*4), R9 // 5*count
	LEAQ (R8)(R8*1), R10 // 6*count
	LEAQ (R10)(DX*1), R11 // 7*count

loop8:
	MOVOU (SI), X0
	MOVOU (SI)(DX*1), X1
	MOVOU (SI)(DX*2), X2
	MOVOU (SI)(R8*1), X3
	MOVOU (SI)(DX*4), X4
	MOVOU (SI)(R9*1), X5
	MOVOU (SI)(R10*1), X6
	MOVOU (SI)(R11*1), X7

	// Bytes into words: X0, X2, X4, X6 hold elements 0-7 of bytes 01, 23,
	// 45, 67; X8, X9, X10, X11 elements 8-15.
	MOVO X0, X8
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X8
	MOVO X2, X9
	PUNPCKLBW X3, X2
	PUNPCKHBW X3, X9
	MOVO X4, X10
	PUNPCKLBW X5, X4
	PUNPCKHBW X5, X10
	MOVO X6, X11
	PUNPCKLBW X7, X6
	PUNPCKHBW X7, X11

	// Elements 0-7: words into double words (bytes 0-3, bytes 4-7), then
	// double words into elements.
	MOVO X0, X1
	PUNPCKLWL X2, X0 // elements 0-3, bytes 0-3
	PUNPCKHWL X2, X1 // elements 4-7, bytes 0-3
	MOVO X4, X3
	PUNPCKLWL X6, X4 // elements 0-3, bytes 4-7
	PUNPCKHWL X6, X3 // elements 4-7, bytes 4-7
	MOVO X0, X5
	PUNPCKLLQ X4, X0 // elements 0-1
	PUNPCKHLQ X4, X5 // elements 2-3
	MOVO X1, X7
	PUNPCKLLQ X3, X1 // elements 4-5
	PUNPCKHLQ X3, X7 // elements 6-7
	MOVOU X0, (DI)
	MOVOU X5, 16(DI)
	MOVOU X1, 32(DI)
	MOVOU X7, 48(DI)

	// Elements 8-15 alike.
	MOVO X8, X12
	PUNPCKLWL X9, X8
	PUNPCKHWL X9, X12
	MOVO X10, X13
	PUNPCKLWL X11, X10
	PUNPCKHWL X11, X13
	MOVO X8, X14
	PUNPCKLLQ X10, X8
	PUNPCKHLQ X10, X14
	MOVO X12, X9
	PUNPCKLLQ X13, X12
	PUNPCKHLQ X13, X9
	MOVOU X8, 64(DI)
	MOVOU X14, 80(DI)
	MOVOU X12, 96(DI)
	MOVOU X9, 112(DI)

	ADDQ $16, SI
	ADDQ $128, DI
	DECQ CX
	JNZ loop8

done8:
	RET
