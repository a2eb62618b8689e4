; 16x16 -> 32-bit multiply, constant time.
; void m16(uint8_t *r, const uint8_t *a, const uint8_t *b)
    .text
    .global m16
    .global m16__core_begin
    .global m16__core_end
    .type m16, @function
m16:
    movw r26, r22           ; X = a
    movw r30, r20           ; Z = b
m16__core_begin:
    ld r18, X+
    ld r19, X
    ld r20, Z+
    ld r21, Z
    movw r30, r24           ; Z = r
    mul r18, r20
    movw r22, r0
    mul r19, r21
    movw r24, r0
    clr r26
    mul r18, r21
    add r23, r0
    adc r24, r1
    adc r25, r26
    mul r19, r20
    add r23, r0
    adc r24, r1
    adc r25, r26
    st Z+, r22
    st Z+, r23
    st Z+, r24
    st Z+, r25
m16__core_end:
    clr r1
    ret
    .size m16, .-m16
