"""The AAPCS as a leaf routine meets it: arguments in r0-r3, r4-r11 (and lr, if written) kept
for the caller, sp restored; the return through `bx lr` so that Thumb callers (ARMv4T
interworking) come back in their own state."""

CALLEE_SAVED = frozenset({4, 5, 6, 7, 8, 9, 10, 11, 14})
