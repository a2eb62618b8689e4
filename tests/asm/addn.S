; n-byte add with carry out, loop (about 13 cycles a byte); n is a run-time argument.
; void addn(uint8_t r[n+1], const uint8_t *a, const uint8_t *b, uint16_t n)   n >= 1
SREG_IO = 0x3f
    .text
    .global addn
addn:
    push r28
    push r29
    movw r28, r24           ; Y = r
    movw r26, r22           ; X = a
    movw r30, r20           ; Z = b
    clc
    in r0, SREG_IO
1:  out SREG_IO, r0
    ld r20, X+
    ld r21, Z+
    adc r20, r21
    st Y+, r20
    in r0, SREG_IO
    subi r18, 1
    sbci r19, 0
    brne 1b
    out SREG_IO, r0
    clr r20
    adc r20, r20
    st Y, r20
    pop r29
    pop r28
    ret
