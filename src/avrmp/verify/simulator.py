"""Run a routine in simavr: one host-process launch per batch of calls.

The host (host.c) is compiled against libsimavr on first use into a cache
directory; its file name carries the hash of its source, so an edited host is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import AvrmpError
from ..target.avr.parts import MCUS
from .inputs import GUARD, HANDLER_ROOM
from .toolchain import Firmware

SIM_INSTALL_HINT = "apt-get install simavr libsimavr-dev libelf-dev gcc"
_ARG_SEED = 0x5EED


@dataclass(frozen=True)
class Layout:
    """Where a call's buffers and stack sit: the result buffer, each operand buffer, the caller's
    SP (the host checks that they fit SRAM below the stack)."""

    r: int
    ops: tuple[int, ...]
    sp_top: int


@dataclass(frozen=True)
class Call:
    operands: tuple[bytes, ...]  # input buffers: (a, b) for mul/add/sub, (a,) for sqr
    result_len: int  # bytes of the result buffer r
    int_args: tuple[int, ...] = ()  # extra 16-bit integer args after the pointers
    irq_at: int | None = None  # raise an interrupt after this many routine instructions
    layout: Layout | None = None  # None: buffers low in SRAM, SP at the batch's stack top
    sreg: int = 0  # SREG at entry (with irq_at, I is set)
    seed: int | None = None  # registers' (and with random_ram, SRAM's) start values
    random_ram: bool = False  # SRAM outside the operands random, not zero
    isr_model: bool = False  # an interrupt after every instruction where one can be taken
    profile: bool = False  # report the cycles spent at each instruction of the core

    @property
    def shares_operand(self) -> bool:
        """Two operands in one buffer (f(r, x, x)): reads of b are reads of a."""
        return self.layout is not None and len(set(self.layout.ops)) < len(self.layout.ops)


@dataclass(frozen=True)
class Measurement:
    result: bytes
    abi_cycles: int
    core_cycles: int
    stack_depth: int
    pc_digest: str
    addr_digest: str
    instructions: int
    callee_saved_ok: bool
    r1_zero: bool
    sp_ok: bool
    bad_writes: tuple[int, ...]
    inputs_unmodified: bool
    clobbered_regs: tuple[int, ...]
    error: str | None
    irq_taken: bool = False
    irq_sp: int | None = None  # the routine's SP when the interrupt was taken
    i_flag_ok: bool = True  # the I flag on return is what it was on entry
    io_writes: tuple[int, ...] = ()  # I/O registers written besides SP and SREG
    hazard: str | None = None  # an interrupt would break the routine (see host.c)
    bad_read: str | None = None  # a load from memory or an I/O register not the call's own
    r_addr: int = 0
    sp_top: int = 0
    profile: tuple[tuple[int, int], ...] = ()  # (byte address, cycles) of the core, if asked


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "avrmp"


def _host_source() -> bytes:
    return (resources.files("avrmp.verify") / "host.c").read_bytes()


def host_binary() -> Path:
    """Path of the compiled simulator host, building it if needed (atomic, race-safe)."""
    src = _host_source()
    defines = [f"-DGUARD={GUARD}", f"-DHANDLER_ROOM={HANDLER_ROOM}"]  # one number, one place
    digest = hashlib.sha256(src + " ".join(defines).encode()).hexdigest()[:16]
    target = cache_dir() / f"avrmp-host-{digest}"
    if target.is_file() and os.access(target, os.X_OK):
        return target
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise AvrmpError(f"no C compiler found to build the simulator host: {SIM_INSTALL_HINT}")
    if not Path("/usr/include/simavr/sim_avr.h").exists() and not _header_found(cc):
        raise AvrmpError(f"simavr headers not found: {SIM_INSTALL_HINT}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        csrc = Path(tmp) / "host.c"
        csrc.write_bytes(src)
        tmp_bin = Path(tmp) / "host"
        proc = subprocess.run(
            [cc, "-O2", "-std=gnu99", "-w", *defines, str(csrc), "-o", str(tmp_bin), "-lsimavr",
             "-lelf"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            first = next(
                (ln.strip() for ln in proc.stderr.splitlines() if "error" in ln.lower()),
                proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "unknown error",
            )
            raise AvrmpError(f"building the simulator host failed ({first}): {SIM_INSTALL_HINT}")
        os.replace(tmp_bin, target)
    return target


def _header_found(cc: str) -> bool:
    proc = subprocess.run(
        [cc, "-E", "-x", "c", "-"],
        input="#include <simavr/sim_avr.h>\n",
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0


def _batch_text(fw: Firmware, calls: Sequence[Call], max_cycles: int) -> str:
    nops = max((len(c.operands) for c in calls), default=0)
    opmax = [
        max((len(c.operands[i]) for c in calls if i < len(c.operands)), default=0)
        for i in range(nops)
    ]
    rmax = max((c.result_len for c in calls), default=0)
    head = ["AVRMP6", fw.entry, fw.done, fw.vectors_end, fw.harness_end, fw.filler,
            -1 if fw.core_begin is None else fw.core_begin,
            -1 if fw.core_end is None else fw.core_end, max_cycles, _lacks(fw.mcu), len(calls),
            nops, rmax, *opmax]
    lines = [" ".join(str(x) for x in head)]
    for idx, c in enumerate(calls):
        if c.result_len < 0:
            raise AvrmpError(f"call {idx}: result_len must be >= 0")
        lines.append(" ".join(str(x) for x in _call_fields(c, idx, nops)))
    return "\n".join(lines) + "\n"


def _lacks(mcu: str) -> int:
    """The host's LACKS_* bits: instructions simavr would run on `mcu` though the part has
    none (a part avrmp does not list: no check)."""
    part = MCUS.get(mcu)
    return 0 if part is None else (not part.has_mul) | 2 * (not part.has_jmp_call)


def _call_fields(c: Call, idx: int, nops: int) -> list:
    ops = [(c.operands[i].hex() or "-") if i < len(c.operands) else "-" for i in range(nops)]
    ints = [int(v) & 0xFFFF for v in c.int_args]
    seed = (_ARG_SEED * 1_000_003 + idx) & 0x7FFF_FFFF_FFFF if c.seed is None else c.seed
    irq = -1 if c.irq_at is None else int(c.irq_at)
    flags = int(c.random_ram) | 2 * int(c.isr_model) | 4 * int(c.profile)
    lay = c.layout
    addrs = [0, 0, *([0] * nops)] if lay is None else \
        [lay.sp_top, lay.r, *lay.ops, *([0] * (nops - len(lay.ops)))]
    return [c.result_len, irq, seed & 0x7FFF_FFFF_FFFF_FFFF, flags, c.sreg & 0xFF, *addrs,
            len(ints), *ints, *ops]


def run_batch(
    fw: Firmware, calls: Sequence[Call], *, max_cycles: int = 10_000_000,
    stack_top: int | None = None,
) -> list[Measurement]:
    """Run every call in one simulator process; one Measurement per call, in order.
    stack_top: the caller's SP (default RAMEND)."""
    if not calls:
        return []
    if not Path(fw.elf).is_file():
        raise AvrmpError(f"firmware not found: {fw.elf}: rebuild it with build_firmware")
    if any(len(c.operands) > 8 or len(c.int_args) > 8 for c in calls):
        raise AvrmpError("too many arguments: at most 8 operand buffers and 8 integer args")
    host = host_binary()
    text = _batch_text(fw, calls, max_cycles)
    try:
        proc = subprocess.run(
            [str(host), str(fw.elf), fw.mcu, *([str(stack_top)] if stack_top else [])],
            input=text,
            capture_output=True,
            text=True,
            errors="replace",  # a crashing firmware may make simavr print raw bytes
            check=False,
        )
    except OSError as exc:
        raise AvrmpError(
            f"cannot start the simulator host {host}: {exc.strerror}: "
            f"delete {cache_dir()} to rebuild it"
        ) from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise AvrmpError(
            f"simulator host failed (status {proc.returncode}: {tail[0]}): "
            f"check that {fw.elf} is a valid {fw.mcu} firmware"
        )
    header = json.loads(lines[0])
    if "fatal" in header:
        raise AvrmpError(f"simulator: {header['fatal']} ({fw.mcu}, {fw.elf.name})")
    out: list[Measurement] = []
    for ln in lines[1:]:
        d = json.loads(ln)
        if "fatal" in d:
            raise AvrmpError(f"simulator: {d['fatal']} ({fw.mcu}, {fw.elf.name})")
        out.append(
            Measurement(
                result=bytes.fromhex(d["result"]),
                abi_cycles=d["abi_cycles"],
                core_cycles=d["core_cycles"],
                stack_depth=d["stack_depth"],
                pc_digest=d["pc_digest"],
                addr_digest=d["addr_digest"],
                instructions=d["instructions"],
                callee_saved_ok=d["callee_saved_ok"],
                r1_zero=d["r1_zero"],
                sp_ok=d["sp_ok"],
                bad_writes=tuple(d["bad_writes"]),
                inputs_unmodified=d["inputs_unmodified"],
                clobbered_regs=tuple(d["clobbered_regs"]),
                error=d["error"],
                irq_taken=d["irq_taken"],
                irq_sp=d["irq_sp"] if d["irq_sp"] >= 0 else None,
                i_flag_ok=d["i_flag_ok"],
                io_writes=tuple(d["io_writes"]),
                hazard=d["hazard"],
                bad_read=d["bad_read"],
                r_addr=d["r_addr"],
                sp_top=d["sp_top"],
                profile=tuple((pc, n) for pc, n in d.get("profile", ())),
            )
        )
    if len(out) < len(calls) and out and "timeout" in (out[-1].error or ""):
        return out  # a routine that hangs ends the batch at its first call
    if len(out) != len(calls):
        tail = proc.stderr.strip().splitlines()[-1:] or ["no message"]
        raise AvrmpError(
            f"simulator host stopped after {len(out)} of {len(calls)} calls ({tail[0]}): "
            "report this with the firmware"
        )
    return out
