; Routines that never return normally.
    .text
    .global hang
hang:
    rjmp hang

    .global bad_opcode
bad_opcode:
    .word 0x0001
    ret
