"""The benchmark's default catalog: which routines `bash run bench` measures, filtered and swept
by the CLI."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import AvrmpError
from ..routine.generate import generate
from ..spec import Spec
from ..target.avr.parts import DEFAULT_MCU
from ..techniques.karatsuba.large import large_levels
from ..techniques.karatsuba.mul import fixed_mul_levels
from ..techniques.registry import ALGORITHMS
from ..verify.checks import spec_fits

# The benchmark's default catalog: (op, algo, variant, sizes in bits).
# An optional fifth field True marks a looped routine (Spec.looped).
DEFAULT_CATALOG: list[tuple] = [
    ("mul", "product-scanning", "branchfree", (48, 64, 80, 96, 128, 160, 192, 256, 512)),
    ("mul", "operand-scanning", "branchfree", (160, 192, 256, 512)),
    ("mul", "hybrid", "branchfree", (160, 192, 256, 512)),
    ("mul", "operand-caching", "branchfree", (160, 192, 256, 512)),
    ("mul", "consecutive-operand-caching", "branchfree", (128, 160, 192, 256, 512)),
    ("sqr", "product-scanning", "branchfree", (64, 128, 160, 192, 256, 512)),
    ("mul", "rps", "branchfree", (128, 160, 192, 256, 512, 1024, 2048)),
    ("sqr", "rps", "branchfree", (128, 160, 192, 256, 512, 1024, 2048)),
    ("mul", "product-scanning", "branchfree", (64, 96, 160, 192, 256, 512, 1024, 2048), True),
    ("sqr", "product-scanning", "branchfree", (64, 96, 160, 256, 1024, 2048), True),
    ("mul", "operand-caching", "branchfree", (64, 96, 160, 192, 256, 512, 1024, 2048), True),
    ("mul", "karatsuba", "branchfree", (48, 64, 80, 96, 128, 160, 192, 224, 256)),
    ("mul", "karatsuba", "branched", (48, 64, 80, 96, 128, 160, 192, 224, 256)),
    ("sqr", "karatsuba", "branchfree", (128, 160, 192, 224, 256, 384, 512)),
    ("mul", "karatsuba", "branchfree", (384, 512, 768, 1024, 1536, 2048)),
    ("mul", "karatsuba", "branched", (384, 512, 768, 1024, 1536, 2048)),
    ("sqr", "karatsuba", "branchfree", (768, 1024, 1536, 2048)),
    ("add", "ripple", "branchfree", (128, 256, 1024, 2048)),
    ("sub", "ripple", "branchfree", (128, 256, 1024, 2048)),
]


def _sweeps(params: dict[str, list[int]], accepts: tuple[str, ...]) -> list[dict]:
    """The parameter sets to run an algorithm with: every combination of the swept values it
    takes ([{}]: its defaults, when nothing is swept; []: it takes none of the swept ones)."""
    sweeps = [{}]
    for key, values in params.items():
        if key in accepts:
            sweeps = [{**s, key: v} for s in sweeps for v in values]
    return [] if params and sweeps == [{}] else sweeps


def catalog(
    ops: Iterable[str] | None = None,
    bits: Iterable[int] | None = None,
    algos: Iterable[str] | None = None,
    variants: Iterable[str] | None = None,
    mcu: str = "atmega128",
    params: dict[str, Iterable[int] | None] | None = None,
) -> list[Spec]:
    """The default benchmark, filtered by the given lists (None = everything in the catalog).
    params: algorithm parameters to sweep ({"e": [2, 4, 8]}): a routine that takes a parameter
    is run once per value instead of with its default; the others are left out (an algorithm
    --algos names that takes none of them is an error)."""
    params = {k: list(v) for k, v in (params or {}).items() if v}
    for algo in algos or ():
        if params and algo in ALGORITHMS and not set(params) & set(ALGORITHMS[algo].accepts):
            flags = ", ".join(f"--{k}" for k in params)
            raise AvrmpError(f"--algos {algo}: it takes none of {flags}; bench it separately")
    specs = []
    for op, algo, variant, sizes, *extra in DEFAULT_CATALOG:
        looped = bool(extra and extra[0])  # optional fifth field: looped
        if ops and op not in ops or algos and algo not in algos:
            continue
        if variants and variant not in variants:
            continue
        sweeps = _sweeps(params, ALGORITHMS[algo].accepts)
        for b in (bits or sizes):
            if bits and b not in bits:
                continue
            for sweep in sweeps:
                try:
                    spec = Spec(op, b, algo, variant=variant, mcu=mcu, looped=looped, **sweep)
                except AvrmpError:
                    if not bits and mcu == DEFAULT_MCU and not sweep:
                        raise
                    continue  # not offered at this size, on this MCU, or with this parameter
                if spec in specs or mcu != DEFAULT_MCU and not runs_on_mcu(spec):
                    continue
                specs.append(spec)
    if not specs:
        known = ", ".join(ALGORITHMS)
        raise AvrmpError(f"the selection matches no routine in the catalog (algorithms: {known})")
    return specs


def runs_on_mcu(spec: Spec) -> bool:
    """Whether the routine fits the MCU: operand buffers (with the runner's guards) plus stack in
    SRAM (spec_fits), and the generated code in flash (and in RCALL reach for the no-MUL
    subroutine)."""
    if not spec_fits(spec):
        return False
    try:
        generate(spec)
    except AvrmpError:
        return False
    return True


def _tuned_extras() -> list[Spec]:
    """Routines tuned beyond the catalog, so that they too generate without a search: every
    --levels option of the fixed-size Karatsuba multiplications from 96 to 256 bits, the odd
    sizes whose base has an odd byte count (168 bits: micro-ecc's secp160r1 order), small squarings, every --levels option of the
    1024-bit squaring, and the large Karatsuba routines for the ATmega2560."""
    out = []
    for variant in ("branchfree", "branched"):
        for bits in (96, 128, 192, 256):
            out += [Spec("mul", bits, "karatsuba", variant, levels=lv)
                    for lv in fixed_mul_levels(bits // 8)]
        out += [Spec("mul", bits, "karatsuba", variant)
                for bits in (24, 40, 56, 72, 88, 112, 168)]
    out += [Spec("mul", 48, "karatsuba", levels=1), Spec("mul", 64, "karatsuba", levels=2)]
    out += [Spec("sqr", bits, "karatsuba") for bits in (16, 24, 40, 56, 72, 88, 104, 136, 168)]
    out += [Spec("sqr", 256, "karatsuba", levels=2)]
    out += [Spec("sqr", 1024, "karatsuba", levels=lv) for lv in large_levels(128, "sqr")]
    # On parts with 3-byte return addresses (ATmega2560) the large routines' frames lie further
    # above each callee's SP: a build of their own.
    out += [Spec(op, bits, "karatsuba", variant, mcu="atmega2560")
            for op, algo, variant, sizes, *_ in DEFAULT_CATALOG
            if algo == "karatsuba" for bits in sizes if bits > 256]
    return out


TUNED_EXTRAS = _tuned_extras()
