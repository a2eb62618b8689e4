"""Building blocks shared by every technique: accumulators (accumulator), the operand cache
(operand_cache), in-register products and squares (products, square), carry chains, absolute
differences and conditional negation (arith), pointer arithmetic and parallel moves (pointers),
and the stack pointer (stack)."""
