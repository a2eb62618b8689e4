"""Build the bundle's example the way the Arduino IDE (AVR core 1.8, platform.txt) and PlatformIO
(atmelavr) do: every .S of the library and the sketch compiled with -flto (the sketch as C++ with
-Os -ffunction-sections -fdata-sections), linked with -Os -flto -Wl,--gc-sections.  There is no
Arduino core here: a stand-in main() calls setup() once and then stops the simulator (cli; sleep),
where the core's main() would call init() and then loop() for ever."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import AvrmpError
from ..verify.toolchain import find_avr_gcc


@dataclass(frozen=True)
class Board:
    mcu: str
    define: str  # the board macro the Arduino IDE sets
    serial: bool  # UART0 and a 16-bit Timer1: the example prints


BOARDS = {
    "uno": Board("atmega328p", "ARDUINO_AVR_UNO", True),
    "mega": Board("atmega2560", "ARDUINO_AVR_MEGA2560", True),
    "attiny85": Board("attiny85", "ARDUINO_AVR_ATTINYX5", False),
}

COMMON = ["-DF_CPU=16000000L", "-DARDUINO=10819", "-DARDUINO_ARCH_AVR"]
ASM_FLAGS = ["-c", "-g", "-x", "assembler-with-cpp", "-flto", "-MMD"]
CXX_FLAGS = ["-c", "-g", "-Os", "-w", "-std=gnu++11", "-fpermissive", "-fno-exceptions",
             "-ffunction-sections", "-fdata-sections", "-fno-threadsafe-statics",
             "-Wno-error=narrowing", "-MMD", "-flto"]
LINK_FLAGS = ["-w", "-Os", "-g", "-flto", "-fuse-linker-plugin", "-Wl,--gc-sections"]

_MAIN = """\
// Stand-in for the Arduino core's main(): setup() once, then stop simavr.
#include <avr/interrupt.h>
void setup();
int main() {
  setup();
  cli();
  __asm__ volatile("sleep");
  for (;;) {
  }
}
"""


def build_example(library: Path, sketch: Path, board: str, workdir: Path) -> Path:
    """The example's firmware (ELF) for `board`, from the library folder's src/ and the sketch."""
    b = BOARDS[board]
    gcc = find_avr_gcc()
    gxx = str(Path(gcc).with_name("avr-g++"))
    target = [f"-mmcu={b.mcu}", *COMMON, f"-D{b.define}", f"-I{library / 'src'}"]
    workdir.mkdir(parents=True, exist_ok=True)
    main = workdir / "main.cpp"
    main.write_text(_MAIN)
    objects = []
    for asm in sorted((library / "src").glob("*.S")):
        objects.append(_compile([gcc, *ASM_FLAGS, *target], asm, workdir))
    for source in (sketch, main):
        objects.append(_compile([gxx, *CXX_FLAGS, *target, "-x", "c++"], source, workdir))
    elf = workdir / f"{sketch.stem}.{board}.elf"
    _run([gcc, *LINK_FLAGS, f"-mmcu={b.mcu}", "-o", str(elf), *map(str, objects), "-lm"],
         f"linking the example for {board}")
    return elf


def _compile(command: list[str], source: Path, workdir: Path) -> Path:
    obj = workdir / f"{source.name}.o"
    _run([*command, str(source), "-o", str(obj)], f"compiling {source.name}")
    return obj


def _run(command: list[str], what: str) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    if proc.returncode != 0:
        out = (proc.stderr + proc.stdout).strip().splitlines()
        first = next((ln for ln in out if "error" in ln.lower()), out[-1] if out else "")
        raise AvrmpError(f"{what} failed: {first.strip()}")
