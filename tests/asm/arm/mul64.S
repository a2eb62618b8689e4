@ Hand-written 2-word x 2-word -> 4-word multiplies for the ARM7TDMI (ARM state), AAPCS:
@ r0 = r (4 words), r1 = a (2 words), r2 = b (2 words), words least significant first.
@ mul64 is right; every other routine has one bug that avrmp's ARM verifier must name.

    .syntax unified
    .arm
    .text

.macro begin name
    .align 2
    .global \name
    .type \name, %function
\name:
.endm

.macro end name
    .size \name, .-\name
.endm

@ r0 = a0 * b0 low word and everything after it: the right product, row by row.
@ Expects a0 in r3, a1 in r1, b0 in r12, b1 in r2; uses r4 and r5.
.macro PRODUCT
    umull r4, r5, r3, r12     @ r5:r4 = a0 b0
    str r4, [r0]
    mov r4, #0
    umlal r5, r4, r3, r2      @ r4:r5 = a0 b1 + hi(a0 b0)
    mov r3, #0
    umlal r5, r3, r1, r12     @ r3:r5 = a1 b0 + r5: word 1 and a carry
    str r5, [r0, #4]
    mov r5, #0
    umlal r4, r5, r1, r2      @ r5:r4 = a1 b1 + r4
    adds r4, r4, r3
    adc r5, r5, #0
    str r4, [r0, #8]
    str r5, [r0, #12]
.endm

.macro LOADS
    ldr r3, [r1]              @ a0
    ldr r1, [r1, #4]          @ a1
    ldr r12, [r2]             @ b0
    ldr r2, [r2, #4]          @ b1
.endm

@ The right product, with a constant from the literal pool that follows it (XORed away).
.macro WITH_LITERAL
    push {r4, r5}
    ldr r4, =0x12345678
    eor r12, r4, r4
    LOADS
    eor r12, r12, r4
    eor r12, r12, r4
    PRODUCT
    pop {r4, r5}
    bx lr
    .ltorg
.endm

begin mul64
    push {r4, r5}
mul64__core_begin:
    LOADS
    PRODUCT
mul64__core_end:
    pop {r4, r5}
    bx lr
end mul64

@ r0 = a * a, r1 = a: the same product, b being a.
begin sqr64
    push {r4, r5}
sqr64__core_begin:
    mov r2, r1
    LOADS
    PRODUCT
sqr64__core_end:
    pop {r4, r5}
    bx lr
end sqr64

@ Stores its arguments r1, r2, r3 to r[0..2]: what the caller passed.
begin args
    stmia r0, {r1, r2, r3}
    bx lr
end args

@ The carry out of word 1 is dropped.
begin mul64_wrong
    push {r4, r5}
    LOADS
    umull r4, r5, r3, r12
    str r4, [r0]
    mov r4, #0
    umlal r5, r4, r3, r2
    mov r3, #0
    umlal r5, r3, r1, r12
    str r5, [r0, #4]
    mov r5, #0
    umlal r4, r5, r1, r2
    str r4, [r0, #8]
    str r5, [r0, #12]
    pop {r4, r5}
    bx lr
end mul64_wrong

@ r4 is used but not saved.
begin mul64_r4
    push {r5}
    LOADS
    PRODUCT
    pop {r5}
    bx lr
end mul64_r4

@ Returns with SP 8 bytes above the caller's.
begin mul64_sp
    push {r4, r5}
    LOADS
    PRODUCT
    pop {r4, r5}
    add sp, sp, #8
    bx lr
end mul64_sp

@ Writes a fifth word after the 4-word result.
begin mul64_writes
    push {r4, r5}
    LOADS
    PRODUCT
    str r5, [r0, #16]
    pop {r4, r5}
    bx lr
end mul64_writes

@ Flips bit 0 of a[0] in memory (after reading it).
begin mul64_input
    push {r4, r5}
    ldr r3, [r1]
    eor r12, r3, #1
    str r12, [r1]
    ldr r1, [r1, #4]
    ldr r12, [r2]
    ldr r2, [r2, #4]
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_input

@ Right unless a and b are one buffer (f(r, x, x)): then b0 is taken one too large. The
@ conditional ADD runs in the same cycles either way, so only the result shows it.
begin mul64_aliased
    push {r4, r5}
    cmp r1, r2
    LOADS
    addeq r12, r12, #1
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_aliased

@ Moves SP far down and back without touching the memory there, then changes a[0] and puts
@ it back: the stack it holds at that moment does not reach operand A.
begin mul64_dip
    push {r4, r5}
    sub sp, sp, #0x100000
    add sp, sp, #0x100000
    ldr r3, [r1]
    mvn r4, r3
    str r4, [r1]
    str r3, [r1]
    LOADS
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_dip

@ Saves r4 and r5 below SP without moving it (no red zone: an interrupt would overwrite them).
begin mul64_below_sp
    stmdb sp, {r4, r5}
    LOADS
    PRODUCT
    ldmdb sp, {r4, r5}
    bx lr
end mul64_below_sp

@ Enables IRQ and FIQ on the way out (the caller may have masked them).
begin mul64_msr
    push {r4, r5}
    LOADS
    PRODUCT
    pop {r4, r5}
    msr cpsr_c, #0x13
    bx lr
end mul64_msr

@ Reads a1 by an unaligned LDR, which the ARM7TDMI rotates.
begin mul64_unaligned
    push {r4, r5}
    ldr r4, [r1, #3]
    LOADS
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_unaligned

@ Returns to Thumb state whatever the caller's state.
begin mul64_force_thumb
    push {r4, r5}
    LOADS
    PRODUCT
    pop {r4, r5}
    orr lr, lr, #1
    bx lr
end mul64_force_thumb

@ Reads at an address that depends on a0's bit 2 only when a and b are one buffer (the
@ conditional loads take the same cycles either way).
begin mul64_alias_leak
    push {r4, r5}
    ldr r3, [r1]
    and r3, r3, #4
    cmp r1, r2
    ldreq r4, [r1, r3]
    ldrne r4, [r1]
    LOADS
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_alias_leak

@ Right, with a constant from its literal pool (read from its own code: allowed).
begin mul64_literal
    WITH_LITERAL
end mul64_literal

@ Right, whatever its buffers' alignment: it takes another (equally long) path where the
@ result is 8-byte aligned, as gcc -O3 code does for a doubleword copy.
begin mul64_align
    push {r4, r5}
    tst r0, #4
    movne r4, r4
    bne 1f
    nop
1:
    LOADS
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_align

@ Spins forever.
begin mul64_hang
    push {r4, r5}
    LOADS
1:  b 1b
end mul64_hang

@ Right, but takes a branch when a0 is not zero.
begin mul64_branch
    push {r4, r5}
    LOADS
    cmp r3, #0
    bne 1f
    mov r12, r12
1:  PRODUCT
    pop {r4, r5}
    bx lr
end mul64_branch

@ Right, no branch, but a conditionally executed shift by a register (2 cycles if it runs,
@ 1 if not) whose condition depends on a0.
begin mul64_predicated
    push {r4, r5}
    LOADS
    cmp r3, #0
    movne r4, r4, lsl r4      @ r4 is dead here
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_predicated

@ Reads address 0, where nothing is mapped.
begin mul64_unmapped
    push {r4, r5}
    mov r3, #0
    ldr r3, [r3]
    pop {r4, r5}
    bx lr
end mul64_unmapped

@ Switches to Thumb state.
begin mul64_thumb
    add r3, pc, #1            @ the Thumb code below, bit 0 set
    bx r3
    .thumb
    movs r0, r0
    bx lr
    .arm
end mul64_thumb

@ Calls the supervisor.
begin mul64_swi
    swi 0
    bx lr
end mul64_swi

@ returns with MOV PC, LR: on the ARM7TDMI that does not interwork, so a Thumb caller breaks.
begin mul64_arm_return
    push {r4, r5}
    LOADS
    PRODUCT
    pop {r4, r5}
    mov pc, lr
end mul64_arm_return

@ returns by popping PC: on ARMv4T that does not interwork either.
begin mul64_pop_pc
    push {r4, r5, lr}
    LOADS
    PRODUCT
    pop {r4, r5, pc}
end mul64_pop_pc

@ reads the word after a and leaves it unused (the result is right).
begin mul64_peek
    push {r4, r5}
    ldr r3, [r1, #8]          @ a[2]: not part of a
    LOADS
    PRODUCT
    pop {r4, r5}
    bx lr
end mul64_peek

@ Right, placed in RAM (a section both writable and executable), with its literal pool.
    .section .ramfunc, "awx", %progbits
begin mul64_ram
    WITH_LITERAL
end mul64_ram
