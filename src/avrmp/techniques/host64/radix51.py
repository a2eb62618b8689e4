"""Radix 2^51 (seed 004: "let's get rid of the carries"): five signed 64-bit limbs at 51-bit
steps.  Addition and subtraction work limb by limb with no carries (arithmetic in Z[x]); carrying
is a separate, en-bloc pass; the product sums 25 signed 128-bit products into 9 coefficients and
carries them into 10 limbs (a coefficient does not fit one 64-bit limb, so mul must carry)."""

from __future__ import annotations

from ...target.host64 import VALUE_BITS, Representation
from .common import (
    ARITHMETIC_SHIFT_CHECK,
    LITTLE_ENDIAN_WORDS,
    MUL64_HALVES,
    CFunction,
    CHelpers,
    HostSource,
    assemble,
    block,
    digit_expr,
    limbwise,
    pack_lines,
    words_of,
)

HELPERS = LITTLE_ENDIAN_WORDS + ARITHMETIC_SHIFT_CHECK + CHelpers("""\
#define MASK51 INT64_C(0x7ffffffffffff) /* 2^51 - 1 */

/* x + y and x - y on int64_t limbs, wrapping mod 2^64 rather than overflowing: the arithmetic
   runs on uint64_t, where it is defined, and the conversion back is implementation-defined in
   C99 (modular in GCC, Clang and MSVC), never undefined.  Within the headroom it is plain
   addition; past it a limb wraps, which the tests show. */
static int64_t add_wrap(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x + (uint64_t)y);
}

static int64_t sub_wrap(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x - (uint64_t)y);
}

/* One en-bloc carry step (seed 004): c = lo >> 51 = floor(lo / 2^51), also for negative lo;
   lo keeps lo - c 2^51 = lo mod 2^51 (int64_t is two's complement, so the mask is exact);
   hi gets c. */
static void carry_step(int64_t *lo, int64_t *hi)
{
    int64_t c = *lo >> 51;
    *lo &= MASK51;
    *hi = add_wrap(*hi, c);
}

#if defined(__SIZEOF_INT128__) && !defined(AVRMP_NO_INT128)
/* Signed 128-bit coefficients in the compiler's type (x86-64: one IMUL, ADD/ADC). */
__extension__ typedef __int128 s128;

static s128 mul_s(int64_t a, int64_t b)
{
    return (s128)a * b;
}

static s128 add_s(s128 x, s128 y)
{
    return x + y;
}

static int64_t low51(s128 t) /* t mod 2^51, in [0, 2^51) */
{
    return (int64_t)((uint64_t)t & MASK51);
}

static s128 shr51(s128 t) /* floor(t / 2^51) */
{
    return t >> 51;
}

static int64_t to_int64(s128 t)
{
    return (int64_t)t;
}
#else""", ("add_wrap", "sub_wrap", "carry_step", "s128", "mul_s", "add_s", "low51", "shr51", "to_int64"),
    ("MASK51",)) + MUL64_HALVES + CHelpers("""\
/* Signed 128-bit coefficients as two's complement hi:lo, for compilers without __int128. */
typedef struct {
    uint64_t lo, hi;
} s128;

static s128 mul_s(int64_t a, int64_t b)
{
    /* The unsigned product of the two bit patterns; a negative factor stands for itself
       + 2^64 there, so the other factor is subtracted from the high word (mod 2^128). */
    s128 t;
    mul64(&t.hi, &t.lo, (uint64_t)a, (uint64_t)b);
    t.hi -= (uint64_t)b & ((uint64_t)0 - ((uint64_t)a >> 63));
    t.hi -= (uint64_t)a & ((uint64_t)0 - ((uint64_t)b >> 63));
    return t;
}

static s128 add_s(s128 x, s128 y)
{
    s128 t;
    t.lo = x.lo + y.lo;
    t.hi = x.hi + y.hi + (t.lo < x.lo);
    return t;
}

static int64_t low51(s128 t)
{
    return (int64_t)(t.lo & MASK51);
}

static s128 shr51(s128 t)
{
    s128 r;
    r.lo = (t.lo >> 51) | (t.hi << 13);
    r.hi = (uint64_t)((int64_t)t.hi >> 51);
    return r;
}

static int64_t to_int64(s128 t)
{
    return (int64_t)t.lo;
}
#endif
""")


def notes(rep: Representation) -> list[str]:
    n = rep.max_summands
    return [
        "Layout: A = sum a[i] 2^(51 i), i < 5, a[i] int64_t; a[4] (at 2^204) keeps the rest.",
        "Reduced (what from_bytes and carry leave): a[0..3] in [0, 2^51 - 1] and",
        "a[4] = floor(A / 2^204), so A in [0, 2^255) has every limb in [0, 2^51 - 1].  (The",
        "lecture calls any limbs in [-2^52 + 1, 2^52 - 1] reduced; this is the narrower form",
        "carrying leaves.)  add and sub work limb by limb without carries; limbs may go",
        "negative.",
        f"Headroom: a +/- chain of up to {n} reduced operands ({rep.lazy_additions} additions)",
        f"then carry is exact: {n} (2^51 - 1) = 2^63 - {n}, and the carry step adds at most",
        f"{n - 1} from the limb below, reaching 2^63 - 1; going down the carry is -{n} and the",
        f"limb reaches -2^63.  carry needs |a[i]| <= 2^63 - {n}; one more operand wraps a limb.",
        "mul: 25 signed 64 x 64 -> 128-bit products summed into 9 coefficients, carried into 10",
        "limbs (limbs 0..8 in [0, 2^51), limb 9 = floor(AB / 2^459)).  Exact, for any signs, when",
        f"each operand is a +/- sum of up to {rep.mul_summands} reduced operands: the top limb",
        f"must stay an int64_t, and {rep.mul_summands}^2 (2^255 - 1)^2 < 2^522 = 2^(459 + 63).",
        "to_bytes and product_to_bytes carry a copy and write the value mod 2^256 (2^512),",
        "two's complement for a negative value.",
        "Aliasing: r may be a or b in every function.",
    ]


def functions(rep: Representation, name: str) -> list[CFunction]:
    n, m = rep.limbs, rep.product_limbs
    limbs = f"const int64_t a[{n}], const int64_t b[{n}]"
    widths = rep.widths()
    return [
        CFunction("from_bytes", "void", f"int64_t r[{n}], const unsigned char in[32]",
                  ("r = the 32-byte little-endian integer in, reduced (bit 255 goes to r[4]).",),
                  block(words_of(VALUE_BITS) + [
                      f"r[{i}] = (int64_t){digit_expr(p, widths[i] if i < n - 1 else None, 4)};"
                      for i, p in enumerate(rep.positions)])),
        CFunction("to_bytes", "void", f"unsigned char out[32], const int64_t a[{n}]",
                  ("out = a mod 2^256 as 32 bytes, little-endian (a carried copy, packed).",),
                  block([f"int64_t t[{n}];", "int i;", "",
                         f"for (i = 0; i < {n}; i++)", "    t[i] = a[i];", f"{name}_carry(t);"]
                        + pack_lines(rep.positions, 4, "t"))),
        CFunction("add", "void", f"int64_t r[{n}], {limbs}",
                  ("r = a + b limb by limb, no carries.",),
                  block(limbwise(n, "int64_t", "add_wrap(a[{i}], b[{i}])"))),
        CFunction("sub", "void", f"int64_t r[{n}], {limbs}",
                  ("r = a - b limb by limb, no borrows (limbs may become negative).",),
                  block(limbwise(n, "int64_t", "sub_wrap(a[{i}], b[{i}])"))),
        CFunction("carry", "void", f"int64_t a[{n}]",
                  ("Carry a en bloc to reduced form: a[0..3] in [0, 2^51), a[4] keeps the rest.",
                   "Each limb's floor(limb / 2^51) goes to the next limb, limb 0 first, so a",
                   "negative limb borrows from the one above it."),
                  block([f"carry_step(&a[{i}], &a[{i + 1}]);" for i in range(n - 1)])),
        CFunction("mul", "void", f"int64_t r[{m}], {limbs}",
                  ("r = a * b in 10 reduced limbs (schoolbook coefficients, then carried).",
                   "Coefficient k = sum of a[i] b[k - i] as a signed 128-bit integer; each is",
                   "carried into the next (t = c_k + carry; limb = t mod 2^51;",
                   "carry = floor(t / 2^51)) and the last carry is limb 9."),
                  mul_body(n)),
        CFunction("product_to_bytes", "void", f"unsigned char out[64], const int64_t a[{m}]",
                  ("out = the 10-limb product a mod 2^512 as 64 bytes (a carried copy, packed).",),
                  block([f"int64_t t[{m}];", "int i;", "",
                         f"for (i = 0; i < {m}; i++)", "    t[i] = a[i];"]
                        + [f"carry_step(&t[{i}], &t[{i + 1}]);" for i in range(m - 1)]
                        + pack_lines(rep.product_positions, 8, "t"))),
    ]


def mul_body(n: int) -> str:
    lines = ["s128 " + ", ".join(f"c{k}" for k in range(2 * n - 1)) + ", t;",
             "int64_t " + ", ".join(f"a{i} = a[{i}]" for i in range(n)) + ";",
             "int64_t " + ", ".join(f"b{i} = b[{i}]" for i in range(n)) + ";", ""]
    for k in range(2 * n - 1):
        terms = [f"mul_s(a{i}, b{k - i})" for i in range(n) if 0 <= k - i < n]
        lines.append(f"c{k} = {terms[0]};")
        lines += [f"c{k} = add_s(c{k}, {term});" for term in terms[1:]]
    lines += ["", "t = c0;"]
    for k in range(2 * n - 1):
        if k:
            lines.append(f"t = add_s(shr51(t), c{k});")
        lines.append(f"r[{k}] = low51(t);")
    lines.append(f"r[{2 * n - 1}] = to_int64(shr51(t));")
    return block(lines)


def radix51_source(rep: Representation, name: str) -> HostSource:
    """The .c and .h of this representation, its functions named name_*."""
    return assemble(rep, name, HELPERS, functions(rep, name), notes(rep))
