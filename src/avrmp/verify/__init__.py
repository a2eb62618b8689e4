"""Verification: the avr-gcc toolchain and the test firmware (toolchain), the simulator host
that runs it in simavr (simulator, host.c), the inputs and the oracle (inputs), and the checks of
correctness, calling convention, writes and timing (checks)."""
