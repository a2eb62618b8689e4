"""The inputs every routine faces and the oracle (Python's int) that judges its results."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from ..errors import AvrmpError

DEFAULT_TESTS = 1000  # random inputs in one run, beyond the edge cases
MAX_TESTS = 10_000_000  # the most in one run: hours, not days


def check_tests(tests: int, least: int = 0) -> None:
    """A one-line error unless `tests` (--tests) is a count a run can take (least: the fewest
    the command takes)."""
    if not least <= tests <= MAX_TESTS:
        raise AvrmpError(f"--tests {tests}: choose {least} to {MAX_TESTS}")


def oracle(op: str, n: int, operands: Sequence[bytes]) -> bytes:
    a = int.from_bytes(operands[0], "little")
    b = int.from_bytes(operands[-1], "little")
    if op == "mul":
        return (a * b).to_bytes(2 * n, "little")
    if op == "sqr":
        return (a * a).to_bytes(2 * n, "little")
    if op == "add":
        return (a + b).to_bytes(n + 1, "little")
    if op == "sub":
        return ((a - b) % (1 << (8 * (n + 1)))).to_bytes(n + 1, "little")
    raise AvrmpError(f"unknown operation {op!r}: choose one of mul, sqr, add, sub")


def _split_operand(n: int, depth: int, rng: random.Random) -> int:
    """An n-byte operand whose halves compare as <, = or > (chosen at random) at every level of a
    halving recursion `depth` deep, the differences themselves built the same way, so that the
    middle products of inner levels also see every sign."""
    if depth == 0 or n < 2:
        return rng.getrandbits(8 * n)
    k = n // 2  # low half: k bytes; high half: n - k bytes
    rel = rng.choice("<=>")
    high = _split_operand(n - k, depth - 1, rng)
    if rel == "=":
        low = high & ((1 << (8 * k)) - 1)
    else:
        diff = _split_operand(k, depth - 1, rng)
        low = high + diff if rel == ">" else high - diff
        if not 0 <= low < 1 << (8 * k):
            low = rng.getrandbits(8 * k)
    return low | (high << (8 * k))


STRUCTURED = 240  # operands built from extreme bytes, beside the uniformly random ones
EXTREME_BYTES = (0x00, 0xFF, 0xFF, 0x01, 0xFE, 0x80, 0x7F)


def _structured_operand(n: int, rng: random.Random) -> int:
    """An operand of extreme bytes (0xFF most of all), some 4-byte words zero or all ones, a
    few bytes random: the inputs that push a carry catcher or a column sum to its bound.
    Uniform random operands almost never do (a byte pair of 0xFF is one in 65536)."""
    raw = bytearray(rng.choice(EXTREME_BYTES) if rng.random() < 0.85 else rng.getrandbits(8)
                    for _ in range(n))
    for w in range(0, n, 4):
        fill = rng.random()
        if fill < 0.15 or fill > 0.8:
            raw[w:w + 4] = bytes([0 if fill < 0.15 else 0xFF]) * len(raw[w:w + 4])
    return int.from_bytes(raw, "little")


RUN_BYTES = (0x00, 0xFF, 0xFF, 0x01, 0xFE, None)  # None: a random byte
ALIASED = 64  # pairs (x, x) for the end of a two-operand load: half run as f(r, x, x)
# Instructions per verification for the operands of byte runs, at most RUNS_PER_BYTE an operand
# byte: 4000 inputs of a 128-bit multiplication, 32 of the largest.
RUN_BUDGET = 8_000_000
RUNS_PER_BYTE, MIN_RUNS = 250, 32


def run_count(nbytes: int, instructions: int, budget: int = RUN_BUDGET) -> int:
    """How many operands of byte runs a load of nbytes-byte operands takes, for a routine that
    executes `instructions` a call, within `budget` instructions."""
    return max(MIN_RUNS, min(RUNS_PER_BYTE * nbytes, budget // max(1, instructions)))


def _run_operand(n: int, rng: random.Random) -> int:
    """An operand of byte runs (mostly 0x00 and 0xFF) of random lengths: its products and the
    sums built from them hold long runs of 0xFF, along which a dropped carry would have had to
    ripple, at every position."""
    raw = bytearray()
    while len(raw) < n:
        v = rng.choice(RUN_BYTES)
        raw += bytes([rng.getrandbits(8) if v is None else v]) * rng.randint(1, max(1, n // 2))
    return int.from_bytes(raw[:n], "little")


EXTREME_WORDS = (0, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFE, 1, 0x8000_0000, 0x7FFF_FFFF,
                 0xFFFF_0000, 0x0000_FFFF)


def _word_operand(n: int, rng: random.Random) -> int:
    """An operand of extreme 32-bit words, a few random: a 32-bit multiplier's products and
    the carries caught from them reach their bounds on these (a dropped carry in an ARM7TDMI
    carry catcher passed the byte-level operands on most seeds)."""
    words = [rng.choice(EXTREME_WORDS) if rng.random() < 0.85 else rng.getrandbits(32)
             for _ in range((n + 3) // 4)]
    return int.from_bytes(b"".join(w.to_bytes(4, "little") for w in words)[:n], "little")


def test_operands(n: int, n_inputs: int, count: int, seed: int = 1, runs: int = 0,
                  aliased: int = 0, words: int = 0) -> Iterator[tuple[int, ...]]:
    """Edge cases first, then Karatsuba sign patterns, then operands of extreme bytes, then
    `count` uniformly random tuples, then `runs` tuples of byte runs, `words` tuples of extreme
    32-bit words and (for two operands) `aliased` pairs (x, x) of random and run operands."""
    rng = random.Random(seed)
    top = (1 << (8 * n)) - 1
    edges = [0, top, 1, 1 << (8 * n - 1), top - 1, top >> 1, top ^ (top >> 1)]
    edges += [int.from_bytes(bytes([v]) * n, "little") for v in (0x55, 0xAA, 0x80, 0x01, 0x7F)]
    for x in edges:
        for y in (0, top, 1, x):
            yield (x,) if n_inputs == 1 else (x, y)
    for bit in range(0, 8 * n, max(1, n // 4)):  # single bits across the whole operand
        yield (1 << bit,) if n_inputs == 1 else (1 << bit, top)
    for depth in range(1, 6):
        for _ in range(24):
            ops = tuple(_split_operand(n, depth, rng) for _ in range(n_inputs))
            yield ops
    structured = random.Random(seed ^ 0x5757)  # its own stream: the random tuples stay as they were
    for _ in range(STRUCTURED):
        yield tuple(_structured_operand(n, structured) for _ in range(n_inputs))
    for _ in range(count):
        yield tuple(rng.getrandbits(8 * n) for _ in range(n_inputs))
    tail = random.Random(seed ^ 0x52554E)  # its own stream too
    for _ in range(runs):
        yield tuple(_run_operand(n, tail) for _ in range(n_inputs))
    worded = random.Random(seed ^ 0x574F5244)
    for _ in range(words):
        yield tuple(_word_operand(n, worded) for _ in range(n_inputs))
    for k in range(aliased if n_inputs == 2 else 0):
        x = _run_operand(n, tail) if k % 2 else tail.getrandbits(8 * n)
        yield (x, x)


GUARD = 16  # bytes between buffers (the host's guard: reads there land in random bytes)
# Below a routine's own stack: the harness's interrupt handler, which writes 31 bytes on the
# ATmega; the host refuses a call that leaves less than this between the buffers and SP.
HANDLER_ROOM = 48
INTERRUPT_ROOM = 64  # stack bytes an interrupt handler may use below the routine's SP


def random_layout(rng: random.Random, ram: tuple[int, int], sizes: Sequence[int],
                  stack_need: int) -> tuple[int, tuple[int, ...], int] | None:
    """Where one call's buffers (sizes: the result's, then each operand's) and the caller's SP
    go: buffers in a random order with random gaps, half the time one of them straddling a
    256-byte page; SP anywhere above them, half the time with a low byte that makes the
    routine's stack (stack_need bytes) cross a page.  Returns (r, ops, sp_top), or None if
    SRAM leaves no room to vary."""
    start, end = ram
    total = sum(s + GUARD for s in sizes) + GUARD
    lowest_top = start + total + stack_need + INTERRUPT_ROOM
    if lowest_top > end:
        return None
    top = rng.randint(lowest_top, end)
    if stack_need > 2 and rng.random() < 0.5:
        crossing = [t for t in (p * 256 + rng.randrange(min(stack_need, 256))
                                for p in range(lowest_top // 256, end // 256 + 1))
                    if lowest_top <= t <= end]
        top = rng.choice(crossing) if crossing else top
    region = (start + GUARD, top - stack_need - INTERRUPT_ROOM)
    at = _place(rng, region, sizes)
    return at[0], tuple(at[1:]), top


def _place(rng: random.Random, region: tuple[int, int], sizes: Sequence[int]) -> list[int]:
    """Start addresses for the buffers inside region, in a random order with random gaps."""
    order = list(range(len(sizes)))
    rng.shuffle(order)
    slack = region[1] - region[0] - sum(s + GUARD for s in sizes)
    cuts = sorted(rng.randint(0, slack) for _ in order)
    gaps = [b - a for a, b in zip([0, *cuts], cuts)]
    at, p = [0] * len(sizes), region[0]
    for i, gap in zip(order, gaps):
        p += gap
        at[i] = p
        p += sizes[i] + GUARD
    free = region[1] - p  # room to shift everything up
    if rng.random() < 0.5 and sizes:
        i = rng.randrange(len(sizes))  # this buffer straddles a page, if a shift can make it
        shifts = [page - (sizes[i] + 1) // 2 - at[i] for page in range(256, region[1], 256)]
        shifts = [s for s in shifts if -(min(at) - region[0]) <= s <= free]
        if shifts:
            delta = rng.choice(shifts)
            at = [a + delta for a in at]
    return at
