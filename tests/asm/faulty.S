; Deliberately faulty variants of m16 (16x16 -> 32-bit multiply); each has one bug
; that the runner must catch.
SPL_IO = 0x3d
SPH_IO = 0x3e

; load a into r18:r19 and b into r20:r21, Z = r
.macro LOADS
    movw r26, r22
    movw r30, r20
    ld r18, X+
    ld r19, X
    ld r20, Z+
    ld r21, Z
    movw r30, r24
.endm

; r22..r25 = r18:r19 * r20:r21 using \zero as a zero register (clobbers r0, r1)
.macro MUL16 zero
    mul r18, r20
    movw r22, r0
    mul r19, r21
    movw r24, r0
    clr \zero
    mul r18, r21
    add r23, r0
    adc r24, r1
    adc r25, \zero
    mul r19, r20
    add r23, r0
    adc r24, r1
    adc r25, \zero
.endm

.macro STORES
    st Z+, r22
    st Z+, r23
    st Z+, r24
    st Z+, r25
.endm

    .text
; wrong result: one cross product missing
    .global m16_wrong
m16_wrong:
    LOADS
    mul r18, r20
    movw r22, r0
    mul r19, r21
    movw r24, r0
    clr r26
    mul r18, r21
    add r23, r0
    adc r24, r1
    adc r25, r26
    STORES
    clr r1
    ret

; clobbers callee-saved r2 without saving it
    .global m16_clobber
m16_clobber:
    LOADS
    MUL16 r2
    STORES
    clr r1
    ret

; leaves r1 non-zero
    .global m16_r1
m16_r1:
    LOADS
    MUL16 r26
    STORES
    ldi r26, 1
    mov r1, r26
    ret

; writes one byte past the result buffer
    .global m16_overflow
m16_overflow:
    LOADS
    MUL16 r26
    STORES
    st Z, r22
    clr r1
    ret

; data-dependent branch: skips the a0 products when a0 == 0 (result still right)
    .global m16_branch
m16_branch:
    LOADS
    clr r26
    mul r19, r21
    movw r24, r0
    clr r22
    clr r23
    tst r18
    breq 1f
    mul r18, r20
    movw r22, r0
    mul r18, r21
    add r23, r0
    adc r24, r1
    adc r25, r26
1:  mul r19, r20
    add r23, r0
    adc r24, r1
    adc r25, r26
    STORES
    clr r1
    ret

; keeps a temporary below SP (an interrupt would destroy it)
    .global m16_below_sp
m16_below_sp:
    LOADS
    MUL16 r26
    in r26, SPL_IO
    in r27, SPH_IO
    st -X, r22
    ld r22, X
    STORES
    clr r1
    ret

; modifies its input a
    .global m16_modify_input
m16_modify_input:
    LOADS
    ld r0, X                ; X points at a[1]
    com r0
    st X, r0
    MUL16 r26
    STORES
    clr r1
    ret
