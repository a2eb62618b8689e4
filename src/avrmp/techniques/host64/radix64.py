"""Radix 2^64 (seed 004: "use 4 64-bit integers ... arithmetic works just as before"): four
unsigned limbs, every addition carries through all of them, and the product is the 4 x 4
schoolbook product in eight limbs.  With unsigned __int128 a limb step is one expression the
compiler turns into ADD/ADC or MUL; without it, 32-bit halves and comparisons for the carries."""

from __future__ import annotations

from ...target.host64 import Representation
from .common import (
    LITTLE_ENDIAN_WORDS,
    MUL64_HALVES,
    CFunction,
    CHelpers,
    HostSource,
    assemble,
    block,
)

HELPERS = LITTLE_ENDIAN_WORDS + CHelpers("""\
#if defined(__SIZEOF_INT128__) && !defined(AVRMP_NO_INT128)
/* The compiler's 128-bit type: each limb step is one expression (x86-64: ADD/ADC, SUB/SBB, MUL). */
__extension__ typedef unsigned __int128 u128;

/* *r = a + b + c mod 2^64 (c is 0 or 1); returns the carry out. */
static uint64_t adc(uint64_t *r, uint64_t a, uint64_t b, uint64_t c)
{
    u128 t = (u128)a + b + c;
    *r = (uint64_t)t;
    return (uint64_t)(t >> 64);
}

/* *r = a - b - c mod 2^64 (c is 0 or 1); returns the borrow out. */
static uint64_t sbb(uint64_t *r, uint64_t a, uint64_t b, uint64_t c)
{
    u128 t = (u128)a - b - c;
    *r = (uint64_t)t;
    return (uint64_t)(t >> 64) & 1;
}

/* a * b + c + d <= (2^64 - 1)^2 + 2 (2^64 - 1) = 2^128 - 1 never overflows: *lo gets the low
   word, the high word is returned (the next column's carry). */
static uint64_t mac(uint64_t *lo, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    u128 t = (u128)a * b + c + d;
    *lo = (uint64_t)t;
    return (uint64_t)(t >> 64);
}
#else""", ("u128", "adc", "sbb", "mac")) + MUL64_HALVES + CHelpers("""\
static uint64_t adc(uint64_t *r, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t s = a + b, t = s + c;
    *r = t;
    return (uint64_t)(s < a) | (uint64_t)(t < s);
}

static uint64_t sbb(uint64_t *r, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t d = a - b, t = d - c;
    *r = t;
    return (uint64_t)(a < b) | (uint64_t)(d < c);
}

static uint64_t mac(uint64_t *lo, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t hi, l;
    mul64(&hi, &l, a, b);
    l += c;
    hi += l < c;
    l += d;
    hi += l < d;
    *lo = l;
    return hi;
}
#endif
""")


def notes(rep: Representation) -> list[str]:
    return [
        "Layout: A = a[0] + a[1] 2^64 + a[2] 2^128 + a[3] 2^192, a[i] uint64_t.  Every 4-limb",
        "array is reduced: the representation is unique and holds [0, 2^256).",
        "Headroom: none is needed and none exists (the lecture's radix 2^64): add and sub carry",
        "through all four limbs every time and work mod 2^256, returning the carry (borrow) out,",
        "so a chain of any length is exact mod 2^256 with its carries counted.  Two 255-bit",
        "operands never carry out: 2 (2^255 - 1) < 2^256.",
        f"Product: {rep.product_limbs} limbs (512 bits), 16 multiply-accumulate steps row by row",
        "(operand scanning), exact for any operands.  There is no carry function: there is",
        "nothing to normalise.",
        "Aliasing: r may be a or b in every function.",
    ]


def functions(rep: Representation, name: str) -> list[CFunction]:
    n, m = rep.limbs, rep.product_limbs
    limbs = f"const uint64_t a[{n}], const uint64_t b[{n}]"
    return [
        CFunction("from_bytes", "void", f"uint64_t r[{n}], const unsigned char in[32]",
                  ("r = the 32-byte little-endian integer in (all 256 bits).",),
                  block([f"r[{i}] = load64(in + {8 * i});" for i in range(n)])),
        CFunction("to_bytes", "void", f"unsigned char out[32], const uint64_t a[{n}]",
                  ("out = a as 32 bytes, little-endian.",),
                  block([f"store64(out + {8 * i}, a[{i}]);" for i in range(n)])),
        CFunction("add", "uint64_t", f"uint64_t r[{n}], {limbs}",
                  ("r = a + b mod 2^256; returns the carry out (0 or 1).",),
                  block(["uint64_t c;", "c = adc(&r[0], a[0], b[0], 0);"]
                        + [f"c = adc(&r[{i}], a[{i}], b[{i}], c);" for i in range(1, n)]
                        + ["return c;"])),
        CFunction("sub", "uint64_t", f"uint64_t r[{n}], {limbs}",
                  ("r = a - b mod 2^256; returns the borrow out (1 when a < b).",),
                  block(["uint64_t c;", "c = sbb(&r[0], a[0], b[0], 0);"]
                        + [f"c = sbb(&r[{i}], a[{i}], b[{i}], c);" for i in range(1, n)]
                        + ["return c;"])),
        CFunction("mul", "void", f"uint64_t r[{m}], {limbs}",
                  ("r = a * b, all 512 bits (schoolbook, row by row).",
                   "Row i adds a[i] * b to the partial product t[i..i+4]; the operands are read",
                   "into locals first, so r may overlap a or b."),
                  mul_body(n)),
        CFunction("product_to_bytes", "void", f"unsigned char out[64], const uint64_t a[{m}]",
                  ("out = the 8-limb product a as 64 bytes, little-endian.",),
                  block([f"store64(out + {8 * i}, a[{i}]);" for i in range(m)])),
    ]


def mul_body(n: int) -> str:
    ts = ", ".join(f"t{k}" for k in range(2 * n))
    lines = [f"uint64_t {ts}, c;",
             "uint64_t " + ", ".join(f"a{i} = a[{i}]" for i in range(n)) + ";",
             "uint64_t " + ", ".join(f"b{i} = b[{i}]" for i in range(n)) + ";", ""]
    for i in range(n):
        lines.append(f"/* row {i}: t[{i}..{i + n}] {'=' if i == 0 else '+='} a{i} * b */")
        for j in range(n):
            acc = "0" if i == 0 else f"t{i + j}"
            carry = "0" if j == 0 else "c"
            dest = f"t{i + n} = " if j == n - 1 else "c = "
            lines.append(f"{dest}mac(&t{i + j}, a{i}, b{j}, {acc}, {carry});")
    lines += [""] + [f"r[{k}] = t{k};" for k in range(2 * n)]
    return block(lines)


def radix64_source(rep: Representation, name: str) -> HostSource:
    """The .c and .h of this representation, its functions named name_*."""
    return assemble(rep, name, HELPERS, functions(rep, name), notes(rep))
