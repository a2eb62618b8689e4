    .text
    .global broken
broken:
    ldi r18, 1
    adiw r20, 1
    ret
