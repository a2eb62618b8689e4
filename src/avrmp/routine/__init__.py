"""Routines: a Spec's kernel built and wrapped in the avr-gcc calling convention (generate,
wrapper), and the .S and .h files written atomically (files)."""
