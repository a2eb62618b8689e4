"""avrmp: generate, verify and benchmark multiprecision arithmetic for 8-bit AVR."""

__version__ = "0.1.0"
