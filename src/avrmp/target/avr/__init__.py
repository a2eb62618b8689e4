"""The AVR target: instruction table and timing (isa), parts (parts), calling convention (abi)."""
