"""The AVR parts avrmp targets: what the generator, the cost model and the simulator host need to
know about each."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import AvrmpError


@dataclass(frozen=True)
class Mcu:
    name: str
    has_mul: bool
    flash_bytes: int
    sram_bytes: int
    core: str = "avre"  # the timing column of isa.OPS
    pc_bytes: int = 2  # bytes of a return address on the stack (3 above 128 KB of flash)
    simulated: bool = True  # simavr models the part: its cycle counts are measured, not modelled
    # The least program around a routine: an empty main's .text (avr-gcc -Os with avr-libc: the
    # vector table, the start-up code, main and exit).
    program_bytes: int = 174

    def holds(self, code_bytes: int) -> bool:
        """Whether a routine of code_bytes fits the flash with the least program around it."""
        return code_bytes + self.program_bytes <= self.flash_bytes

    @property
    def has_jmp_call(self) -> bool:
        """JMP and CALL exist on parts with more than 8 KB of flash only."""
        return self.flash_bytes > 8 * 1024


MCUS = {
    m.name: m
    for m in (
        Mcu("atmega128", True, 128 * 1024, 4096),
        Mcu("atmega328p", True, 32 * 1024, 2048, program_bytes=138),
        Mcu("atmega2560", True, 256 * 1024, 8192, pc_bytes=3, program_bytes=266),
        Mcu("atmega1284p", True, 128 * 1024, 16384),
        Mcu("attiny85", False, 8 * 1024, 512, program_bytes=58),
        # 128 KB of application flash and 8 KB of boot flash: a 17-bit PC (avr-gcc: avrxmega7)
        Mcu("atxmega128a1", True, 128 * 1024, 8192, core="avrxm", pc_bytes=3, simulated=False,
            program_bytes=546),
    )
}
DEFAULT_MCU = "atmega128"


def get_mcu(name: str) -> Mcu:
    try:
        return MCUS[name]
    except KeyError:
        raise AvrmpError(f"unknown MCU {name!r}: choose one of {', '.join(MCUS)}") from None


def simulated_mcu(name: str) -> Mcu:
    """The part, if simavr can run it; else an AvrmpError that says why there is no figure."""
    mcu = get_mcu(name)
    if not mcu.simulated:
        raise AvrmpError(
            f"simavr cannot simulate {name} ({mcu.core} timing): there is no measured figure for "
            "it; `avrmp gen` reports the cost model's cycles for that core in the .S header"
        )
    return mcu
