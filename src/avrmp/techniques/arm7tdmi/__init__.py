"""Multiplication techniques for the ARM7TDMI (ARM state, 32-bit words): seed 001, section 4.2."""
