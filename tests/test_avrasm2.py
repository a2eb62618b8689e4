"""The AVRASM2 printer: the same program as the GNU as text, in Microchip Studio's syntax.  avra
(an AVRASM2-compatible assembler) must assemble it to exactly the machine code that avr-gcc makes
of the .S, and avrmp rebuild reads its header as it reads the .S's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from avrmp.cli import main
from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec

pytestmark = pytest.mark.skipif(shutil.which("avra") is None or shutil.which("avr-gcc") is None,
                                reason="needs avra and gcc-avr")

SPECS = [Spec("mul", 96, "karatsuba", variant="branched"),  # signed arms: branches and labels
         Spec("mul", 1024, "karatsuba", variant="branched"),  # subroutines, CALL/JMP
         Spec("sqr", 256, "karatsuba"),  # stack frame, SP writes
         Spec("mul", 128, "rps"),  # loops
         Spec("mul", 160, "operand-caching", looped=True),
         Spec("mul", 64, "product-scanning", mcu="attiny85"),  # no MUL: RCALL to a subroutine
         Spec("sub", 128, "ripple")]


def gnu_bytes(asm: Path, mcu: str, tmp: Path) -> bytes:
    """The routine's machine code as avr-gcc assembles it, linked at address 0."""
    obj, elf = tmp / "gnu.o", tmp / "gnu.elf"
    subprocess.run(["avr-gcc", f"-mmcu={mcu}", "-c", str(asm), "-o", str(obj)], check=True)
    subprocess.run(["avr-gcc", f"-mmcu={mcu}", "-nostdlib", "-nostartfiles", "-Wl,-Ttext=0",
                    str(obj), "-o", str(elf)], check=True)
    with elf.open("rb") as f:
        return ELFFile(f).get_section_by_name(".text").data()


def avra_bytes(asm: Path, device: str, tmp: Path) -> bytes:
    """The machine code avra makes of the .asm included in a project for `device`."""
    project = tmp / "project.asm"
    project.write_text(f'.device {device}\n.include "{asm.name}"\n')
    shutil.copy(asm, tmp / asm.name)
    proc = subprocess.run(["avra", project.name], cwd=tmp, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return hex_bytes((tmp / "project.hex").read_text())


def hex_bytes(text: str) -> bytes:
    """Code bytes from Intel HEX (data records, contiguous from address 0)."""
    out = bytearray()
    for line in text.split():
        raw = bytes.fromhex(line[1:])
        count, address, kind = raw[0], int.from_bytes(raw[1:3], "big"), raw[3]
        if kind == 0:
            out[len(out):] = bytes(address + count - len(out))
            out[address:address + count] = raw[4:4 + count]
    return bytes(out)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.symbol)
def test_avra_assembles_the_same_machine_code(spec: Spec, tmp_path: Path) -> None:
    routine = generate(spec)
    gnu, _ = write_routine(routine, tmp_path / "gnu")
    asm, _ = write_routine(routine, tmp_path / "avrasm2", "avrasm2")
    assert asm.suffix == ".asm" and ".global" not in asm.read_text()
    device = {"atmega128": "ATmega128", "attiny85": "ATtiny85"}[spec.mcu]
    expected = gnu_bytes(gnu, spec.mcu, tmp_path)
    assert avra_bytes(asm, device, tmp_path) == expected
    assert len(expected) == routine.code_bytes


def test_rebuild_reads_the_avrasm2_header(tmp_path: Path, capsys) -> None:
    assert main(["gen", "mul", "--bits", "128", "--algo", "karatsuba", "--dialect", "avrasm2",
                 "-o", str(tmp_path / "a")]) == 0
    asm = Path(capsys.readouterr().out.split()[0])
    assert main(["rebuild", str(asm), "-o", str(tmp_path / "b")]) == 0
    assert "identical" in capsys.readouterr().out
    assert (tmp_path / "b" / asm.name).read_text() == asm.read_text()


@pytest.mark.parametrize("spec, device", [
    (Spec("mul", 96, "operand-caching", mcu="attiny85", looped=True), "must have MOVW."),
    (Spec("mul", 64, "product-scanning"), "must have MUL, MOVW."),
    (Spec("mul", 2048, "karatsuba"), "must have MUL, MOVW, CALL/JMP."),
], ids=["no MUL", "MUL", "calls"])
def test_the_header_names_what_the_device_needs(spec, device) -> None:
    """The .asm's header names what the code uses, no more (a no-MUL routine does not ask for
    MUL)."""
    head = generate(spec).avrasm2.split(".cseg")[0]
    assert f"the project's .device {device}" in head


@pytest.mark.parametrize("made_for, refused_on, builds_on", [
    ("atmega128", "m2560def.inc", "m128def.inc"),
    ("atmega2560", "m128def.inc", "m2560def.inc"),
])
def test_a_project_for_the_other_return_address_size_is_refused(made_for, refused_on, builds_on,
                                                                tmp_path: Path) -> None:
    """As the .S's #error: a routine whose frames lie across return addresses stops avra with
    one .error in a project whose device file (its FLASHEND) gives the other size."""
    asm, _ = write_routine(generate(Spec("mul", 512, "karatsuba", mcu=made_for)), tmp_path,
                           "avrasm2")
    for device, refused in ((refused_on, True), (builds_on, False)):
        project = tmp_path / "project.asm"
        project.write_text(f'.include "{device}"\n.cseg\n.include "{asm.name}"\n')
        proc = subprocess.run(["avra", project.name], cwd=tmp_path, capture_output=True,
                              text=True, check=False)
        out = proc.stdout + proc.stderr
        assert ("generated for" in out and made_for in out) == refused, out
        assert (proc.returncode != 0) == refused, out
