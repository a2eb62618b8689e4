"""The AVR parts avrmp targets: what the generator and the runner need to know about each."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import AvrmpError


@dataclass(frozen=True)
class Mcu:
    name: str
    has_mul: bool
    has_call: bool  # CALL/JMP exist (flash > 8 KB)
    flash_bytes: int
    sram_bytes: int
    core: str = "avre+"  # timing table in isa.py


MCUS = {
    m.name: m
    for m in (
        Mcu("atmega128", True, True, 128 * 1024, 4096),
        Mcu("atmega328p", True, True, 32 * 1024, 2048),
        Mcu("atmega2560", True, True, 256 * 1024, 8192),
        Mcu("atmega1284p", True, True, 128 * 1024, 16384),
        Mcu("attiny85", False, False, 8 * 1024, 512),
    )
}
DEFAULT_MCU = "atmega128"


def get_mcu(name: str) -> Mcu:
    try:
        return MCUS[name]
    except KeyError:
        raise AvrmpError(f"unknown MCU {name!r}: choose one of {', '.join(MCUS)}") from None
