"""The ARM7TDMI (ARMv4T, ARM state): its instruction classes and timing, its calling convention."""
