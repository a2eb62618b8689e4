; 8-bit add with carry out, no MUL: runs on attiny85 too.
; void add8(uint8_t r[2], const uint8_t a[1], const uint8_t b[1])
    .text
    .global add8
add8:
    movw r26, r22
    movw r30, r20
    ld r18, X
    ld r19, Z
    movw r30, r24
    clr r20
    add r18, r19
    adc r20, r20
    st Z+, r18
    st Z, r20
    ret
