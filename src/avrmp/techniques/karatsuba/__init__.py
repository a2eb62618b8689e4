"""Karatsuba multiplication and squaring, split by concern: the base block in registers (base,
with the in-register products in regs and the middle part in middle), the combination (combine),
the stack frame and pointers (frame), the search over a block's forms (search), multiplication up
to 256 bits (mul), squaring (sqr_base, sqr), and large operands by memory levels over them
(large)."""
