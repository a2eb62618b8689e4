; Routines that move SP with OUT, to test interrupt safety.
; void NAME(uint8_t r[2], const uint8_t a[2]): copies a to r through two stack frames.
; Frame 1 ends at SP = (SPH << 8) | 0x08 (live data near its top); frame 2 takes 16
; more bytes, so SPH changes.  Freeing frame 2 with "out SPH; out SPL" and interrupts
; enabled leaves SP pointing into frame 1's live data for one instruction.
#include "set_sp.inc"

.macro SET_SP_NONATOMIC lo, hi
    out SPH_IO, \hi
    out SPL_IO, \lo
.endm

.macro BODY free2
    push r28
    push r29
    in r28, SPL_IO
    in r29, SPH_IO
    movw r30, r28           ; Z = SP after the pushes
    movw r26, r22
    ld r18, X+
    ld r19, X
    ldi r28, 0x08
    SET_SP_ATOMIC r28, r29  ; frame 1
    sbiw r30, 8
    st Z, r18               ; live data near the top of frame 1
    std Z+1, r19
    sbiw r28, 16
    SET_SP_ATOMIC r28, r29  ; frame 2
    nop
    nop
    adiw r28, 16
    \free2 r28, r29         ; free frame 2
    nop
    ld r18, Z
    ldd r19, Z+1
    movw r26, r24
    st X+, r18
    st X, r19
    adiw r30, 8
    SET_SP_ATOMIC r30, r31  ; free frame 1
    pop r29
    pop r28
    ret
.endm

    .text
    .global sp_atomic
sp_atomic:
    BODY SET_SP_ATOMIC

    .global sp_nonatomic
sp_nonatomic:
    BODY SET_SP_NONATOMIC

; keeps data below SP across a few instructions (classic red-zone bug)
    .global below_sp
below_sp:
    movw r26, r22
    ld r18, X+
    ld r19, X
    in r26, SPL_IO
    in r27, SPH_IO
    st -X, r18
    st -X, r19
    nop
    nop
    ld r19, X+
    ld r18, X
    movw r26, r24
    st X+, r18
    st X, r19
    ret
