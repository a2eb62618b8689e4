"""Programs: checked instructions, labels and phases (program), their cost (cycles) and their
text for an assembler (gnu_as)."""
