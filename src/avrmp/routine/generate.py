"""Spec -> kernel -> Routine: the technique's kernel, lowered for cores without MUL, wrapped in
the calling convention."""

from __future__ import annotations

import dataclasses
import functools

from ..errors import AvrmpError
from ..spec import Spec
from ..target.avr.parts import MCUS, get_mcu
from ..techniques.kernel import Kernel
from ..techniques.nomul import lower
from ..tuning.choices import Choices
from .wrapper import Routine, wrap


def generate(spec: Spec) -> Routine:
    routine = wrap(spec, _kernel(_kernel_key(spec)))
    flash = get_mcu(spec.mcu).flash_bytes
    if routine.code_bytes > flash:
        raise AvrmpError(
            f"{spec.symbol} needs {routine.code_bytes} bytes of flash but {spec.mcu} has {flash}: "
            "choose a looped or subquadratic algorithm, or a smaller size"
        )
    return routine


def _kernel_key(spec: Spec) -> Spec:
    """The spec as far as the kernel depends on it: kernels name no symbol and differ between
    MCUs only by the hardware multiplier and the core's timing, so routines for two MCUs alike
    in both, or for two names, share one build (named by the first such MCU)."""
    mcu = get_mcu(spec.mcu)
    alike = next(m for m in MCUS.values() if (m.has_mul, m.core) == (mcu.has_mul, mcu.core))
    return dataclasses.replace(spec, name="", mcu=alike.name)


@functools.lru_cache(maxsize=64)
def _kernel(spec: Spec) -> Kernel:
    """The kernel body for a spec (kept: large Karatsuba generation takes seconds).  Callers
    treat it as read-only."""
    mcu = get_mcu(spec.mcu)
    has_mul = mcu.has_mul
    kernel = spec.algorithm.build(spec.op, spec.looped, n=spec.operand_bytes,
                                  variant=spec.variant, levels=spec.levels, d=spec.d, e=spec.e,
                                  has_mul=has_mul, choices=Choices(None, mcu.core))
    return kernel if has_mul else lower(kernel)  # each MUL -> constant-time shift-and-add
