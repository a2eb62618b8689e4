; 16-bit additions, void NAME(uint8_t r[3], const uint8_t a[2], const uint8_t b[2]):
; r = a + b, r[2] the carry.  add16 is right; every other one has one bug that only an unkind
; start state, an interrupt, a flash read or an I/O write check exposes.
#include "set_sp.inc"
#ifdef __AVR_HAVE_JMP_CALL__
#define XCALL call  /* on a part over 64 KB the routine lies above the low sections */
#else
#define XCALL rcall
#endif

; r20:r21 = b, then Z = r
.macro LOAD_B
    movw r30, r20
    ld r20, Z+
    ld r21, Z
    movw r30, r24
.endm

; X = a, r18:r19 = a, r20:r21 = b, Z = r
.macro LOADS
    movw r26, r22
    ld r18, X+
    ld r19, X
    LOAD_B
.endm

; r = r19:r18 + r21:r20 with the carry in r[2]; \first is add (right) or adc (wrong)
.macro SUM first
    \first r18, r20
    adc r19, r21
    clr r22
    rol r22
    st Z+, r18
    st Z+, r19
    st Z, r22
.endm

    .text
    .global add16
add16:
    LOADS
    SUM add
    ret

; carry assumed clear at entry: the first addition is an ADC
    .global add16_carry_in
add16_carry_in:
    LOADS
    SUM adc
    ret

; reads one byte past the end of b, and adds it as if it were zero
    .global add16_read_past
add16_read_past:
    movw r30, r20
    ldd r0, Z+2             ; b[2]: not part of b
    LOADS
    SUM add
    add r22, r0
    st Z, r22
    ret

; reads one byte past the end of b and leaves it unused (the result is right)
    .global add16_peek_past
add16_peek_past:
    movw r30, r20
    ldd r0, Z+2             ; b[2]: not part of b
    LOADS
    SUM add
    ret

; reads a peripheral's data register (a UART's: the read clears its flag; the result is right)
    .global add16_read_io
add16_read_io:
    in r0, 0x0c
    LOADS
    SUM add
    ret

; takes two bytes of stack and reads one it never wrote
    .global add16_uninit_stack
add16_uninit_stack:
    push r28
    push r29
    in r28, SPL_IO
    in r29, SPH_IO
    sbiw r28, 4
    SET_SP_ATOMIC
    LOADS
    ldd r23, Y+1            ; never written: whatever was there
    SUM add
    add r22, r23
    st Z, r22
    adiw r28, 4
    SET_SP_ATOMIC
    pop r29
    pop r28
    ret

; steps X with INC on its low byte only: wrong when a straddles a 256-byte page
    .global add16_page_wrap
add16_page_wrap:
    movw r26, r22
    ld r18, X
    inc r26
    ld r19, X
    LOAD_B
    SUM add
    ret

; keeps a byte below SP and reads it back: an interrupt in between destroys it
    .global add16_below_sp
add16_below_sp:
    LOADS
    push r18
    pop r0                  ; r18 now lives at SP, below SP
    in r26, SPL_IO
    in r27, SPH_IO
    ld r18, X               ; read back from below SP
    SUM add
    ret

; frees a 64-byte frame with OUT SPL, OUT SPH and interrupts enabled in between
    .global add16_sp_nonatomic
add16_sp_nonatomic:
    push r28
    push r29
    in r28, SPL_IO
    in r29, SPH_IO
    sbiw r28, 63
    SET_SP_ATOMIC
    LOADS
    std Y+1, r18            ; the frame in use
    SUM add
    adiw r28, 63
    out SPL_IO, r28         ; not atomic: SPH still old
    out SPH_IO, r29
    pop r29
    pop r28
    ret

; returns with interrupts disabled
    .global add16_cli
add16_cli:
    cli
    LOADS
    SUM add
    ret

; returns with interrupts enabled
    .global add16_sei
add16_sei:
    LOADS
    SUM add
    sei
    ret

; enables interrupts for a moment and restores the caller's SREG before it returns
    .global add16_sei_undone
add16_sei_undone:
    in r0, 0x3f
    sei
    nop
    out 0x3f, r0
    LOADS
    SUM add
    ret

; looks a byte of the secret operand up in a flash table (the result is right)
    .global add16_flash_table
add16_flash_table:
    LOADS
    push r30
    push r31
    ldi r30, lo8(table)
    ldi r31, hi8(table)
    add r30, r18
    adc r31, r1
    lpm r0, Z
    pop r31
    pop r30
    SUM add
    ret
    .section .progmem.data,"a",@progbits  ; where avr-ld keeps a table within LPM's reach
table:
    .byte 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
    .fill 240, 1, 0
    .text

; writes an I/O register (PORTB on the ATmega128)
    .global add16_io_write
add16_io_write:
    LOADS
    sbi 0x18, 0
    SUM add
    ret

; never returns
    .global add16_hang
add16_hang:
    rjmp add16_hang

; keeps a copy of a[0] 47 bytes below SP for one instruction: deeper than the harness's own
; handler writes, not deeper than a real one may
    .global add16_below_sp_deep
add16_below_sp_deep:
    push r28
    push r29
    in r28, SPL_IO
    in r29, SPH_IO
    sbiw r28, 48
    SET_SP_ATOMIC
    LOADS
    std Y+1, r18            ; the frame's lowest byte
    adiw r28, 48
    SET_SP_ATOMIC                   ; the frame freed, the byte kept
    nop
    sbiw r28, 48
    SET_SP_ATOMIC
    ldd r18, Y+1            ; read back
    adiw r28, 48
    SET_SP_ATOMIC
    SUM add
    pop r29
    pop r28
    ret

; lifts SP 4 bytes above the caller's (its return address popped) with interrupts enabled,
; written atomically: an interrupt there overwrites the caller's stack
    .global add16_sp_above_caller
add16_sp_above_caller:
    pop r19
    pop r18
    in r26, SPL_IO
    in r27, SPH_IO
    adiw r26, 4
    SET_SP_ATOMIC r26, r27
    nop
    sbiw r26, 4
    SET_SP_ATOMIC r26, r27
    push r18
    push r19
    LOADS
    SUM add
    ret

; "returns" through the reset vector, its return address dropped: SP ends balanced
    .global add16_reset
add16_reset:
    LOADS
    SUM add
    pop r0
    pop r0
    clr r30
    clr r31
    ijmp

; right unless a and b are one buffer, as in f(r, x, x)
    .global add16_alias
add16_alias:
    movw r26, r22
    sub r26, r20
    sbc r27, r21
    or r26, r27             ; zero when the pointers are equal
    neg r26                 ; C unless zero
    sbc r26, r26
    com r26                 ; 0xFF when the pointers are equal, else 0
    mov r0, r26
    LOADS
    add r18, r0
    SUM add
    ret

; right, but where a and b are one buffer it also reads a at an offset that depends on a0
    .global add16_alias_leak
add16_alias_leak:
    movw r26, r22
    sub r26, r20
    sbc r27, r21
    or r26, r27
    neg r26
    sbc r26, r26
    com r26                 ; 0xFF when the pointers are equal, else 0
    movw r30, r22
    ld r0, Z
    and r26, r0
    andi r26, 1             ; a0's bit 0 where the pointers are equal, else 0
    clr r27
    add r30, r26
    adc r31, r27
    ld r0, Z                ; a[0] or a[1], unused
    LOADS
    SUM add
    ret

; a skip over ADIW r24, 12 (0x960c): the part then runs the CLR, which simavr skips as well
    .global add16_skip_adiw
add16_skip_adiw:
    LOADS
    cpse r18, r18
    adiw r24, 12
    clr r18
    SUM add
    ret

; BST with the reserved bit 3 set (0xfb28): simavr runs it as bst r18, 0
    .global add16_reserved_bst
add16_reserved_bst:
    LOADS
    .word 0xfb28
    SUM add
    ret

; a MUL encoded by hand, where the assembler would refuse the mnemonic for a part without MUL
    .global add16_word_mul
add16_word_mul:
    LOADS
    .word 0x9c00            ; mul r0, r0
    clr r1
    SUM add
    ret

; right: a frame set up, freed and set up again (as avr-gcc's code for a callee with a frame
; does), with SP crossing a page between the two halves of each SP write
    .global add16_frames
add16_frames:
    push r28
    push r29
    in r28, SPL_IO
    in r29, SPH_IO
    sbiw r28, 8
    SET_SP_ATOMIC
    adiw r28, 8
    SET_SP_ATOMIC
    sbiw r28, 8
    SET_SP_ATOMIC
    LOADS
    SUM add
    adiw r28, 8
    SET_SP_ATOMIC
    pop r29
    pop r28
    ret

; right: SREG saved and restored through its data address, as avr-gcc -O0 does
    .global add16_sreg_by_st
add16_sreg_by_st:
    LOADS
    push r30
    push r31
    ldi r30, SREG_IO + 0x20
    clr r31
    ld r0, Z
    cli
    st Z, r0
    pop r31
    pop r30
    SUM add
    ret

; writes PORTB through its data address
    .global add16_io_store
add16_io_store:
    LOADS
    sts 0x38, r1
    SUM add
    ret

; reads the high byte of its own return address for a zero (a frame offset off by two): right
; only where the call site sits in the first 512 bytes of flash, as a harness's does
    .global add16_return_address
add16_return_address:
    LOADS
    push r28
    push r29
    in r28, SPL_IO
    in r29, SPH_IO
    ldd r23, Y+3            ; meant: Y+1, a zero saved there; Y+3 is the return address
    pop r29
    pop r28
    SUM add
    add r22, r23
    st Z, r22
    ret

; stops the watchdog from resetting the part, which is the caller's business
    .global add16_wdr
add16_wdr:
    wdr
    LOADS
    SUM add
    ret

#ifdef __AVR_HAVE_ELPM__
; a flash constant read by ELPM with RAMPZ taken as 0 (wrong where the caller left it set, as
; avr-gcc's code does after reading a __flash1 object)
    .global add16_elpm_rampz
add16_elpm_rampz:
    ldi r30, lo8(zero_in_flash)
    ldi r31, hi8(zero_in_flash)
    elpm r0, Z
    LOADS
    SUM add
    add r22, r0
    st Z, r22
    ret

; right: the same with RAMPZ set for the constant (RAMPZ is the routine's to clobber)
    .global add16_elpm
add16_elpm:
    ldi r30, hh8(zero_in_flash)
    out RAMPZ_IO, r30
    rjmp add16_elpm_rampz

; the same constant read with RAMPZ cleared: right only while .text lies in the first 64 KB
    .global add16_elpm_rampz0
add16_elpm_rampz0:
    clr r30
    out RAMPZ_IO, r30
    rjmp add16_elpm_rampz
zero_in_flash:
    .byte 0, 0
#endif

; right: SP moved 32 bytes down and back by atomic writes, interrupts enabled in between (the
; stack it takes counts, though no instruction but an OUT runs at the lower SP)
    .global add16_sp_dip
add16_sp_dip:
    in r26, SPL_IO
    in r27, SPH_IO
    sbiw r26, 32
    SET_SP_ATOMIC r26, r27
    adiw r26, 32
    SET_SP_ATOMIC r26, r27
    LOADS
    SUM add
    ret

; loads a[1] by LD r26, X+, which the AVR manual leaves undefined (simavr lets the load win)
    .global add16_undefined_ld
add16_undefined_ld:
    movw r26, r22
    ld r18, X+
    ld r26, X+              ; undefined: r26 is X's own
    mov r19, r26
    LOAD_B
    SUM add
    ret

; calls into the part's vector table above the harness's two vectors (its last word): in a
; real program, a vector the start-up code points at __bad_interrupt, which restarts the part
    .global add16_vector
add16_vector:
    LOADS
    XCALL __avrmp_vectors_end - 2
    SUM add
    ret

; parks a[1] in SPH with interrupts off: the bits SPH does not implement read back as 0
    .global add16_sph_stash
add16_sph_stash:
    in r0, SREG_IO
    cli
    in r23, SPH_IO
    LOADS
    out SPH_IO, r19
    clr r19
    in r19, SPH_IO
    out SPH_IO, r23
    out SREG_IO, r0
    SUM add
    ret

#ifdef __AVR_HAVE_RAMPZ__
; parks a[1] in RAMPZ, whose bits beyond the part's flash read back as 0
    .global add16_rampz_stash
add16_rampz_stash:
    LOADS
    out RAMPZ_IO, r19
    clr r19
    in r19, RAMPZ_IO
    SUM add
    ret
#endif

; right: its sum in a helper in .lowtext, which avr-ld puts between the vector table and .text
    .global add16_lowtext
add16_lowtext:
    LOADS
    XCALL add16_low_sum
    ret
    .section .lowtext,"ax",@progbits
add16_low_sum:
    SUM add
    ret
    .text

; branch-free but for when things happen: a branch to the next instruction takes a cycle more
; when taken, so the NOPs between run a cycle later by the carry (the total is the same)
    .global add16_branch_to_next
add16_branch_to_next:
    LOADS
    add r18, r20
    brcs .+0
    nop
    brcc .+0
    sub r18, r20
    SUM add
    ret

; reads a constant of its own .text by LPM: right in the harness, where the code lies low, but
; in a program over 64 KB the linker may put .text beyond LPM's reach
    .global add16_lpm_text
add16_lpm_text:
    ldi r30, lo8(zero_in_text)
    ldi r31, hi8(zero_in_text)
    lpm r0, Z
    LOADS
    SUM add
    add r22, r0
    st Z, r22
    ret
zero_in_text:
    .byte 0, 0

; right: interrupts masked for the work and re-enabled only if the caller had them (the trace
; depends on the caller's I flag, not on the data)
    .global add16_irq_save
add16_irq_save:
    in r0, 0x3f
    cli
    LOADS
    SUM add
    sbrc r0, 7
    sei
    ret

; right: SP moved 4 bytes down and back by STS to its data addresses, interrupts masked (SP is
; a page off between the two stores, and nothing runs on it)
    .global add16_sp_by_sts
add16_sp_by_sts:
    in r0, 0x3f
    cli
    lds r26, 0x5d
    lds r27, 0x5e
    sbiw r26, 4
    sts 0x5e, r27
    sts 0x5d, r26
    adiw r26, 4
    sts 0x5e, r27
    sts 0x5d, r26
    out 0x3f, r0
    LOADS
    SUM add
    ret

; its sum in a helper called by ICALL through pm(): an ATmega2560 runs ICALL in its first
; 128 KB only (EICALL with EIND, or gs(), reaches the rest)
    .global add16_icall_pm
add16_icall_pm:
    LOADS
    ldi r30, pm_lo8(add16_icall_sum)
    ldi r31, pm_hi8(add16_icall_sum)
    icall
    ret
add16_icall_sum:
    movw r30, r24
    SUM add
    ret

; right, but reads a byte of a chosen by a bit of a when a and b are one buffer and the caller
; has interrupts disabled (the pointers and the I flag are public, a is not)
    .global add16_leak_shared_cli
add16_leak_shared_cli:
    in r0, 0x3f
    clr r18
    cp r22, r20
    cpc r23, r21
    brne 1f
    sbrs r0, 7
    inc r18
    rjmp 2f
1:  nop
    nop
    nop
2:  movw r30, r22
    ld r19, Z
    and r19, r18
    andi r19, 1
    add r30, r19
    adc r31, r1
    ld r0, Z
    LOADS
    SUM add
    ret

; keeps the carry in r0 by storing it through r0's data address (0x0000)
    .global add16_regfile
add16_regfile:
    LOADS
    add r18, r20
    adc r19, r21
    clr r22
    rol r22
    clr r26
    clr r27
    st X, r22
    st Z+, r18
    st Z+, r19
    st Z, r0
    ret

; reads a's low byte back from r18's data address (0x0012)
    .global add16_regfile_read
add16_regfile_read:
    LOADS
    ldi r26, 18
    clr r27
    ld r18, X
    SUM add
    ret

; reads the byte after its code as an all-ones mask: unprogrammed flash in a harness, someone
; else's code or data in a program (keep it last in the file)
    .global add16_flash_past
add16_flash_past:
    ldi r30, lo8(past_the_code)
    ldi r31, hi8(past_the_code)
#ifdef __AVR_HAVE_ELPM__
    ldi r19, hh8(past_the_code)  ; (the code lies above 64 KB on a part over 64 KB)
    out RAMPZ_IO, r19
    elpm r0, Z
#else
    lpm r0, Z
#endif
    LOADS
    SUM add
    and r22, r0
    st Z, r22
    ret
past_the_code:
