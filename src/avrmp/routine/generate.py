"""Spec -> kernel -> Routine: the technique's kernel built from the tuned table's recorded choices
(or searched, then replayed), lowered for cores without MUL, wrapped in the calling convention."""

from __future__ import annotations

import dataclasses
import functools
import json

from ..errors import AvrmpError
from ..regalloc.vprogram import AllocationError
from ..spec import Spec, data_bytes, return_address_bytes
from ..target.avr.parts import MCUS, get_mcu
from ..techniques.karatsuba.large import stack_estimate
from ..techniques.kernel import Kernel
from ..techniques.nomul import lower
from ..tuning import table
from ..tuning.choices import Choices, Decision, StaleChoices
from .arm import generate_arm
from .wrapper import Routine, wrap


def generate(spec: Spec, tune: bool = False, record: list[Decision] | None = None) -> Routine:
    """The routine for spec, from `record` (decisions, e.g. read back from a .S header), else
    from the tuned table, else (or with tune) by a search."""
    if spec.target == "arm7tdmi":
        return generate_arm(spec)  # no searched choices: one build per technique and size
    require_room(spec)
    require_flash(spec, flash_floor(spec), bound=True)
    tuned = record is None and not tune
    if tuned:
        record = table.lookup(table_key(spec))
    text = None if record is None else json.dumps([d.to_json() for d in record])
    try:
        kernel = _replayed_or_searched(spec, text, tuned)
    except AllocationError as e:  # no build of this spec fits: a one-line error, not a trace
        raise AvrmpError(f"{spec.symbol}: no build fits the registers and memory ({e}); "
                         "leave out --levels or choose another size") from e
    routine = wrap(spec, kernel)
    require_flash(spec, routine.code_bytes)
    return routine


def require_flash(spec: Spec, code_bytes: int, bound: bool = False) -> None:
    """AvrmpError unless code_bytes (bound: a lower bound of them) and the least program around
    them fit the part's flash."""
    mcu = get_mcu(spec.mcu)
    if not mcu.holds(code_bytes):
        needs = f"at least {code_bytes}" if bound else str(code_bytes)
        raise AvrmpError(
            f"{spec.symbol} needs {needs} bytes of flash and the least program around it "
            f"{mcu.program_bytes} more, but {spec.mcu} has {mcu.flash_bytes}: choose a looped "
            "or subquadratic algorithm, or a smaller size"
        )


PRODUCT_SITE_BYTES = 4  # a MUL and an instruction that reads r1:r0 (without MUL, more)


def flash_floor(spec: Spec) -> int:
    """A lower bound on the code of a routine whose every product is a site of its own
    (Algorithm.unrolled_products): the next MUL overwrites r1:r0, so each site is the MUL and
    at least one instruction that reads its product (nomul's sites are longer). 0 for other
    routines. It lets gen refuse a size far beyond the flash before generating it."""
    if spec.looped or not spec.algorithm.unrolled_products:
        return 0
    n = spec.operand_bytes
    products = n * (n + 1) // 2 if spec.op == "sqr" else n * n
    return PRODUCT_SITE_BYTES * products


def _replayed_or_searched(spec: Spec, text: str | None, tuned: bool) -> Kernel:
    try:
        return _kernel(_kernel_key(spec), text)
    except StaleChoices:
        if not tuned:
            raise
        return _kernel(_kernel_key(spec), None)  # the table is behind the generator: search


def has_room(spec: Spec) -> bool:
    """Whether one call's operands, result and stack (stack_bound) fit the part's SRAM."""
    data = data_bytes(spec.op, spec.operand_bytes)
    return data + stack_bound(spec) <= get_mcu(spec.mcu).sram_bytes


def require_room(spec: Spec) -> None:
    """AvrmpError unless one call's operands, result and stack fit the part's SRAM."""
    if not has_room(spec):
        data, sram = data_bytes(spec.op, spec.operand_bytes), get_mcu(spec.mcu).sram_bytes
        raise AvrmpError(
            f"{spec.symbol} needs up to {stack_bound(spec)} bytes of stack besides {data} bytes "
            f"of operands and result, more than {spec.mcu}'s {sram} bytes of SRAM: choose a "
            "smaller size or a larger part"
        )


def stack_bound(spec: Spec) -> int:
    """An upper bound on the stack a call of the routine takes: the return address and the
    saved registers (20 bytes), and its frame (looped operand caching: n + 8; a large
    Karatsuba routine: the frames of its memory levels and its leaf)."""
    n = spec.operand_bytes
    frame = n + 8 if spec.looped and spec.algo == "operand-caching" else 8
    if spec.algo == "karatsuba":
        frame += stack_estimate(spec.op, n, spec.levels, get_mcu(spec.mcu).pc_bytes)
    return 20 + frame


def table_key(spec: Spec) -> str:
    """The tuned table's key for a spec: what its kernel depends on (see _kernel_key)."""
    mcu = get_mcu(spec.mcu)
    extras = [f"{k}={getattr(spec, k)}" for k in ("levels", "d", "e") if getattr(spec, k)]
    extras += ["looped"] * spec.looped + ["nomul"] * (not mcu.has_mul)
    pc = return_address_bytes(spec)
    extras += [mcu.core] * (mcu.core != "avre") + [f"pc{pc}"] * (pc != 2)
    return " ".join([spec.op, str(spec.bits), spec.algo, spec.variant, *extras])


def search(spec: Spec, jitter: int = 0) -> list[Decision]:
    """The decisions a full search makes for spec (what `avrmp tune` records); jitter: jittered
    allocations tried per block (Choices)."""
    choices = Choices(None, get_mcu(spec.mcu).core, jitter)
    _build(spec, choices)
    return choices.made


def _kernel_key(spec: Spec) -> Spec:
    """The spec as far as the kernel depends on it: kernels name no symbol and differ between
    MCUs only by the hardware multiplier, the core's timing and the return address's size, so
    routines for two MCUs alike in these, or for two names, share one build (named by the first
    such MCU)."""
    mcu, pc = get_mcu(spec.mcu), return_address_bytes(spec)
    alike = next(m for m in MCUS.values()
                 if (m.has_mul, m.core) == (mcu.has_mul, mcu.core)
                 and return_address_bytes(spec, m.name) == pc)
    return dataclasses.replace(spec, name="", mcu=alike.name)


@functools.lru_cache(maxsize=64)
def _kernel(spec: Spec, record: str | None) -> Kernel:
    """The kernel for a spec, replaying `record` (decisions as JSON text), or a search's
    decisions.  Kept: large Karatsuba generation takes seconds; callers treat it as read-only."""
    decisions = search(spec) if record is None else \
        [Decision.from_json(d) for d in json.loads(record)]
    choices = Choices(decisions, get_mcu(spec.mcu).core)
    kernel = _build(spec, choices)
    choices.finish()
    kernel = dataclasses.replace(kernel, choices=choices.made)
    return kernel if get_mcu(spec.mcu).has_mul else lower(kernel)  # MUL -> shift-and-add


def _build(spec: Spec, choices: Choices) -> Kernel:
    return spec.algorithm.build(spec.op, spec.looped, n=spec.operand_bytes,
                                variant=spec.variant, levels=spec.levels, d=spec.d, e=spec.e,
                                has_mul=get_mcu(spec.mcu).has_mul,
                                ret_bytes=return_address_bytes(spec), choices=choices)
