"""Published figures the benchmark prints beside ours (ATmega core cycles unless noted).

Sources: seed 000 = Hutter & Schwabe 2014, Table 2; seed 001 = Hutter & Wenger, Tables 4 and 5;
seed 003 = Liu, Seo, Grossschaedl & Kim (RPS); "best public" = the hand-tuned records listed in the
project brief (OsEID, Hutter-Schwabe Curve25519 code), and OsEID's 384- and 768-bit multiplications,
which the brief does not list, as measured here (docs/karatsuba.md, "OsEID at 384 and 768 bits").
"""

from __future__ import annotations

# (op, algo, variant-or-None, bits) -> list of (source, cycles, bytes-or-None)
REFERENCES: dict[tuple[str, str, str | None, int], list[tuple[str, int, int | None]]] = {}


def _add(op: str, algo: str, variant: str | None, source: str, rows: dict) -> None:
    for bits, value in rows.items():
        cycles, size = value if isinstance(value, tuple) else (value, None)
        REFERENCES.setdefault((op, algo, variant, bits), []).append((source, cycles, size))


_add("mul", "product-scanning", None, "seed000 T2",
     {48: (235, 350), 64: (395, 598), 80: (595, 910), 96: (836, 1288)})
_add("mul", "product-scanning", None, "seed001 T4",
     {160: 3957, 192: 5613, 256: 9789, 512: 38013, 1024: 149757, 2048: 594429})
_add("mul", "operand-scanning", None, "seed001 T4",
     {160: 5427, 192: 7759, 256: 13671, 512: 53959, 1024: 214407, 2048: 854791})
_add("mul", "hybrid", None, "seed001 T4",
     {160: 2904, 192: 4144, 256: 7284, 512: 28644, 1024: 113604, 2048: 452484})
_add("mul", "operand-caching", None, "seed001 T4",
     {160: 2395, 192: 3469, 256: 6123, 512: 24317, 1024: 96933, 2048: 387195})
# Seed 001 Table 5: operand caching for e = 2, 4, 8, 10, 20 (e = 10 is the Table 4 column).  The
# e = 20 column assumes 2e + 3 = 43 registers, more than an AVR has.
for _e, _row in {
    2: {160: 3915, 192: 5611, 256: 9915, 512: 39291, 1024: 156411, 2048: 624123},
    4: {160: 2965, 192: 4255, 256: 7531, 512: 29915, 1024: 119227, 2048: 476027},
    8: {160: 2513, 192: 3577, 256: 6339, 512: 25227, 1024: 100635, 2048: 401979},
    20: {160: 2205, 192: 3207, 256: 5671, 512: 22451, 1024: 89529, 2048: 357581},
}.items():
    _add("mul", "operand-caching", None, f"seed001 T5 e={_e}", _row)
_add("mul", "consecutive-operand-caching", None, "seed000 T2",
     {128: (1523, 2346), 160: (2341, 3622), 192: 3437, 256: 6115})
_add("mul", "karatsuba", "branched", "seed000 T2",
     {48: (217, 348), 64: (360, 580), 80: (522, 828), 96: (780, 1228), 128: (1325, 2228),
      160: (1976, 3222), 192: (2923, 4602), 256: (4797, 8022)})
_add("mul", "karatsuba", "branchfree", "seed000 T2",
     {48: (222, 342), 64: (368, 576), 80: (533, 826), 96: (800, 1226), 128: (1369, 2156),
      160: (2030, 3106), 192: (2987, 4492), 256: (4961, 7616)})
# OsEID's 256-bit multiplication takes 7406 bytes of code (the size target of issue 16).
_add("mul", "karatsuba", None, "best public (OsEID)", {128: 1307, 192: 2861, 256: (4512, 7406)})
_add("sqr", "karatsuba", None, "best public (OsEID)", {192: 1839, 256: 3079})
# The brief's records for large operands are ABI cycles (a call from C, saves included).
_add("mul", "karatsuba", None, "best public (OsEID), ABI cycles", {512: 15440, 1024: 50356})
_add("sqr", "karatsuba", None, "best public (OsEID), ABI cycles", {1024: 34766})
# rsa_mul_384 / rsa_mul_768 (OsEID e062ee7, mp_mul_24.S over mp_mul_192.S), run by avrmp verify.
_add("mul", "karatsuba", None, "best public (OsEID, measured here), ABI cycles",
     {384: 10086, 768: 33265})
_add("mul", "karatsuba", "branchfree",
     "best public branch-free (Hutter-Schwabe Curve25519 code), ABI cycles", {256: 5038})
_add("sqr", "karatsuba", None, "best public (Hutter-Schwabe Curve25519 code), ABI cycles",
     {256: 3399})
_add("mul", "karatsuba", None, "seed003 (karatsubarized RPS)", {1024: 85000})
_add("sqr", "karatsuba", None, "seed003 (karatsubarized RPS)", {1024: 48000})
_add("mul", "rps", None, "seed003 (karatsubarized)", {1024: 85000})
_add("sqr", "rps", None, "seed003 (karatsubarized)", {1024: 48000})
# Plain (non-Karatsuba) RPS would be slower than the karatsubarized figures above.  The looped-routine
# target is seed 001's operand caching (unrolled figures, Table 4), shown beside rps as well.
_add("mul", "rps", None, "seed001 T4 operand caching (unrolled)",
     {160: 2395, 192: 3469, 256: 6123, 512: 24317, 1024: 96933, 2048: 387195})

RECORDS_MCU = "atmega128"  # the part the records and the papers' tables were measured on


def references(op: str, algo: str, variant: str, bits: int) -> list[tuple[str, int, int | None]]:
    """The papers' and the records' figures beside a routine measured on RECORDS_MCU."""
    return REFERENCES.get((op, algo, variant, bits), []) + REFERENCES.get((op, algo, None, bits), [])


# Seed 001 Table 5's e = 20 column assumes 43 registers, more than an AVR has: not a target.
INFEASIBLE = ("T5 e=20",)


def best_public(op: str, bits: int) -> list[tuple[str, int, bool]]:
    """The best public code's figures for op at bits: (source, cycles, ABI cycles or core)."""
    return [(source, cycles, "ABI" in source)
            for (o, _, _, b), refs in REFERENCES.items() if (o, b) == (op, bits)
            for source, cycles, _ in refs if source.startswith("best public")]


def best_paper(op: str, bits: int) -> int | None:
    """The fastest core-cycle figure any seed paper gives for op at bits (None: none does)."""
    figures = [cycles for (o, _, _, b), refs in REFERENCES.items() if (o, b) == (op, bits)
               for source, cycles, _ in refs
               if source.startswith("seed") and not any(x in source for x in INFEASIBLE)]
    return min(figures, default=None)


def ratio_to_public(op: str, bits: int, core_cycles: int, abi_cycles: int) -> float | None:
    """Ours over the best public code at this size, on the same basis (core or ABI cycles): the
    largest such ratio, i.e. against the strongest record (None: no public figure)."""
    ratios = [(abi_cycles if abi else core_cycles) / cycles
              for _, cycles, abi in best_public(op, bits)]
    return max(ratios, default=None)

# Seed 001 Table 7: ARM7TDMI cycles (160-bit hybrid: none published).
ARM7TDMI_TABLE7: dict[str, dict[int, int]] = {
    "operand-scanning": {160: 493, 192: 699, 256: 1219},
    "product-scanning": {160: 357, 192: 506, 256: 882},
    "hybrid": {192: 424, 256: 726},
    "operand-caching": {160: 281, 192: 392, 256: 700},
}
