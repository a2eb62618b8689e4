"""Techniques: one module per multiplication, squaring or addition technique (Karatsuba, split
by concern, in its own package), the kernel they produce (kernel), the lowering for cores without
MUL (nomul), and the registry of algorithms the CLI offers (registry)."""
