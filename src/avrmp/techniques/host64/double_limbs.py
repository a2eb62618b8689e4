"""Double-precision limbs (seed 004: "using floating-point limbs"): twelve IEEE-754 doubles at
bit positions ceil(21.25 i), each holding its integer units already multiplied by 2^position, so
a product a[i] b[j] lands at weight 2^(p_i + p_j) without a shift.  Addition and subtraction are
limb by limb; carrying rounds a limb to a multiple of the next limb's weight by adding and
subtracting (2^52 + 2^51) times that weight; the product's 23 coefficients are exact doubles
(below 2^53 units) and are then carried into 24 limbs."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from ...target.host64 import VALUE_BITS, Representation
from .common import (
    ARITHMETIC_SHIFT_CHECK,
    LITTLE_ENDIAN_WORDS,
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


def helpers(name: str) -> CHelpers:
    return LITTLE_ENDIAN_WORDS + ARITHMETIC_SHIFT_CHECK + CHelpers(f"""\
#if FLT_EVAL_METHOD != 0
#error "{name}: doubles must be evaluated in double precision (FLT_EVAL_METHOD 0: SSE2, not x87)"
#endif
#if defined(__FAST_MATH__) || defined(__ASSOCIATIVE_MATH__)
#error "{name}: do not compile with -ffast-math or -fassociative-math (-funsafe-math-optimizations): they may fold the carry (x + C) - C to x"
#endif

/* One carry step (seed 004: "add constant 2^52 + 2^51, subtract constant 2^52 + 2^51", scaled
   by the weight 2^q of the limb above).  With alpha = (2^52 + 2^51) 2^q and |lo| <= 2^(51 + q),
   lo + alpha lies in [2^(52 + q), 2^(53 + q)], where doubles are 2^q apart: (lo + alpha) - alpha
   is lo rounded to a multiple of 2^q (to nearest, ties to even, in the default rounding mode).
   lo keeps lo minus that multiple (at most 2^(q - 1) in magnitude), hi takes the multiple.  Every
   step is exact, so the value is kept in any rounding mode; only the balance needs nearest. */
static void carry_step(double *lo, double *hi, double alpha)
{{
    double c = (*lo + alpha) - alpha;
    *lo -= c;
    *hi += c;
}}

/* The same carry in integers, to unsigned digits: lo keeps lo mod 2^w, hi gets floor(lo / 2^w). */
static void int_carry(int64_t *lo, int64_t *hi, int w)
{{
    int64_t c = *lo >> w;
    *lo &= ((int64_t)1 << w) - 1;
    *hi += c;
}}
""", ("carry_step", "int_carry"), includes=("float.h",))


def hexp(q: int) -> str:
    """2^q as an exact C99 hexadecimal floating constant."""
    return f"0x1p{q:+d}"


def alpha(q: int) -> str:
    """(2^52 + 2^51) 2^q = 1.5 * 2^(52 + q)."""
    return f"0x1.8p{52 + q:+d}"


def carry_steps(positions: Sequence[int], arr: str) -> list[str]:
    return [f"carry_step(&{arr}[{i}], &{arr}[{i + 1}], {alpha(q)}); /* to a multiple of 2^{q} */"
            for i, q in enumerate(positions[1:])]


def to_int_lines(positions: Sequence[int]) -> list[str]:
    """t[i] = the units of a[i] (exact: an integer multiple of 2^p_i scaled by 2^-p_i), then an
    integer carry to unsigned digits below the top limb."""
    lines = [f"t[{i}] = (int64_t)" + (f"(a[{i}] * {hexp(-p)});" if p else f"a[{i}];")
             for i, p in enumerate(positions)]
    widths = [b - a for a, b in pairwise(positions)]
    return lines + [f"int_carry(&t[{i}], &t[{i + 1}], {w});" for i, w in enumerate(widths)]


def notes(rep: Representation) -> list[str]:
    p = ", ".join(map(str, rep.positions))
    return [
        "Layout: A = sum a[i], i < 12, a[i] = u_i 2^p_i (the double holds the scaled value),",
        f"p = {p}",
        "(p_i = ceil(21.25 i), widths 22, 21, 21, 21 repeating: three limbs per 64-bit word, none",
        "crossing a word).  a[11] keeps the rest.  The scale is in the exponent: no shifts.",
        "Reduced (balanced): |u_i| <= 2^(w_i - 1) for i < 11 (from_bytes and carry leave this in",
        "round-to-nearest); |u_11| <= 2^21 whenever |A| < 2^255.",
        "A limb is exact while |u_i| <= 2^53 (every such integer is a double).  n reduced",
        "operands added or subtracted give |u_i| <= n 2^21, and the carry adds at most about n/2",
        f"more: a +/- chain of up to {rep.max_summands} reduced operands"
        + f" (2^32 - {2**32 - rep.max_summands}, i.e.",
        f"{rep.lazy_additions} additions) then carry is exact.",
        "carry: sequential, limb 0 to 11, by carry_step below (one add and three subtracts).",
        "mul: 144 products summed into 23 coefficients at P_k = ceil(21.25 k): a[i] b[j] is a",
        "multiple of 2^(p_i + p_j) >= 2^P_k (ceil x + ceil y >= ceil(x + y)), and for reduced",
        "operands every coefficient stays below 2^45 units, so all sums are exact; then carried",
        "into 24 balanced limbs (a[23], at 2^489, keeps the rest).  Exact when each operand is a",
        f"+/- sum of up to {rep.mul_summands} reduced operands ({rep.mul_summands}^2 2^45 = 2^53).",
        "to_bytes and product_to_bytes convert each limb to int64_t units (exact), carry in",
        "integers and write the value mod 2^256 (2^512), two's complement when negative.",
        "Build: needs FLT_EVAL_METHOD == 0 (x86-64 SSE2, AArch64) and no -ffast-math (checked",
        "below); contracting a * b + c into an FMA changes nothing (every result is exact).",
        "Aliasing: r may be a or b in every function.",
    ]


def from_bytes_lines(rep: Representation) -> list[str]:
    lines = words_of(VALUE_BITS) + ["int64_t t, c = 0;", ""]
    widths = rep.widths()
    for i, p in enumerate(rep.positions):
        scale = f" * {hexp(p)}" if p else ""
        if i == rep.limbs - 1:
            lines.append(f"r[{i}] = (double)((int64_t){digit_expr(p, None, 4)} + c){scale};")
            break
        w = widths[i]
        lines += [f"t = (int64_t){digit_expr(p, w, 4)} + c;",
                  f"c = (t + 0x{1 << (w - 1):x}) >> {w}; /* 1 when t >= 2^{w - 1} */",
                  f"r[{i}] = (double)(t - (c << {w})){scale};"]
    return lines


def mul_lines(rep: Representation) -> list[str]:
    n, m = rep.limbs, rep.product_limbs
    lines = [f"double t[{m}];", "int i;", ""]
    for k in range(2 * n - 1):
        terms = [f"a[{i}] * b[{k - i}]" for i in range(n) if 0 <= k - i < n]
        chunks = [" + ".join(terms[j:j + 4]) for j in range(0, len(terms), 4)]
        lines.append(f"t[{k}] = " + chunks[0] + (";" if len(chunks) == 1 else ""))
        lines += [f"    + {c}" + (";" if j == len(chunks) - 1 else "")
                  for j, c in enumerate(chunks[1:], 1)]
    lines += [f"t[{m - 1}] = 0.0;", ""] + carry_steps(rep.product_positions, "t")
    return lines + ["", f"for (i = 0; i < {m}; i++)", "    r[i] = t[i];"]


def functions(rep: Representation, name: str) -> list[CFunction]:
    n, m = rep.limbs, rep.product_limbs
    limbs = f"const double a[{n}], const double b[{n}]"
    return [
        CFunction("from_bytes", "void", f"double r[{n}], const unsigned char in[32]",
                  ("r = the 32-byte little-endian integer in, reduced (bit 255 goes to r[11]).",
                   "Digits are split in integers, balanced (a digit t >= 2^(w-1) becomes",
                   "t - 2^w and carries 1), then converted and scaled: all exact."),
                  block(from_bytes_lines(rep))),
        CFunction("to_bytes", "void", f"unsigned char out[32], const double a[{n}]",
                  ("out = a mod 2^256 as 32 bytes, little-endian (integer units, carried).",),
                  block([f"int64_t t[{n}];", ""] + to_int_lines(rep.positions)
                        + pack_lines(rep.positions, 4, "t"))),
        CFunction("add", "void", f"double r[{n}], {limbs}",
                  ("r = a + b limb by limb, no carries.",),
                  block(limbwise(n, "double", "a[{i}] + b[{i}]"))),
        CFunction("sub", "void", f"double r[{n}], {limbs}",
                  ("r = a - b limb by limb, no borrows (limbs may become negative).",),
                  block(limbwise(n, "double", "a[{i}] - b[{i}]"))),
        CFunction("carry", "void", f"double a[{n}]",
                  ("Carry a to reduced (balanced) form, limb 0 first; a[11] keeps the rest.",),
                  block(carry_steps(rep.positions, "a"))),
        CFunction("mul", "void", f"double r[{m}], {limbs}",
                  ("r = a * b in 24 reduced limbs at 2^ceil(21.25 k) (coefficients, carried).",),
                  block(mul_lines(rep))),
        CFunction("product_to_bytes", "void", f"unsigned char out[64], const double a[{m}]",
                  ("out = the 24-limb product a mod 2^512 as 64 bytes (integer units, carried).",),
                  block([f"int64_t t[{m}];", ""] + to_int_lines(rep.product_positions)
                        + pack_lines(rep.product_positions, 8, "t"))),
    ]


def double_source(rep: Representation, name: str) -> HostSource:
    """The .c and .h of this representation, its functions named name_*."""
    return assemble(rep, name, helpers(name), functions(rep, name), notes(rep))
