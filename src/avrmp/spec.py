"""Spec: everything that determines a generated routine.  It validates itself on construction,
against the algorithm registry, so everything downstream may assume a valid request."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from .errors import AvrmpError
from .target.avr.parts import DEFAULT_MCU, get_mcu
from .techniques.arm7tdmi.registry import WORD_BITS, ArmAlgorithm, get_arm_algorithm
from .techniques.registry import Algorithm, get_algorithm

OPS = ("mul", "sqr", "add", "sub")
AVR_VARIANTS = ("branched", "branchfree")
VARIANTS = (*AVR_VARIANTS, "consttime")  # consttime: the ARM7TDMI's (its multiplier stops early)
TARGETS = ("avr", "arm7tdmi")
RUNTIME_LENGTH = "run-time argument"  # the spec line's length= for routines that take it


def operand_count(op: str) -> int:
    """The operand buffers a routine reads: squaring has one, the others two."""
    return 1 if op == "sqr" else 2


def is_product(op: str) -> bool:
    return op in ("mul", "sqr")


def result_bytes(op: str, n: int) -> int:
    """The result buffer's bytes for n-byte operands: a product doubles, a sum gains a carry."""
    return 2 * n if is_product(op) else n + 1


def data_bytes(op: str, n: int) -> int:
    """The operands' and the result's bytes of one call, for n-byte operands."""
    return operand_count(op) * n + result_bytes(op, n)


# What --name may not be: the header declares `void NAME(uint8_t *r, ...)` (C keywords up to C23
# and C++'s; the <stdint.h> and <stddef.h> types the .h files use; names a C or Arduino program
# has already). avr-libc's names are asked of avr-gcc (verify.toolchain.refuse_clashing_name);
# Arduino's headers are not at hand to ask, so its common names are listed.
C_RESERVED = frozenset((
    "alignas", "alignof", "auto", "bool", "break", "case", "char", "const", "constexpr",
    "continue", "default", "do", "double", "else", "enum", "extern", "false", "float", "for",
    "goto", "if", "inline", "int", "long", "nullptr", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "static_assert", "struct", "switch",
    "thread_local", "true", "typedef", "typeof", "typeof_unqual", "union", "unsigned", "void",
    "volatile", "while", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
    "uint32_t", "uint64_t", "size_t",
    # a C program's and an Arduino sketch's own functions, <avr/interrupt.h>'s macros
    "main", "setup", "loop", "cli", "sei",
    # Arduino.h's macros, and two its build defines (-DF_CPU, -DARDUINO)
    "min", "max", "abs", "constrain", "round", "radians", "degrees", "sq", "interrupts",
    "noInterrupts", "lowByte", "highByte", "bitRead", "bitSet", "bitClear", "bitToggle",
    "bitWrite", "bit", "clockCyclesPerMicrosecond", "clockCyclesToMicroseconds",
    "microsecondsToClockCycles", "HIGH", "LOW", "INPUT", "OUTPUT", "INPUT_PULLUP", "PI",
    "HALF_PI", "TWO_PI", "DEG_TO_RAD", "RAD_TO_DEG", "EULER", "SERIAL", "DISPLAY", "LSBFIRST",
    "MSBFIRST", "CHANGE", "FALLING", "RISING", "DEFAULT", "EXTERNAL", "INTERNAL", "ARDUINO",
    "F_CPU",
    # C++ keywords (a sketch is C++: the .h is read as C++ there)
    "and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t",
    "class", "compl", "concept", "consteval", "constinit", "const_cast", "co_await",
    "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export",
    "friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "operator", "or",
    "or_eq", "private", "protected", "public", "reinterpret_cast", "requires", "static_cast",
    "template", "this", "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t",
    "xor", "xor_eq",
    # Arduino.h's types, objects and functions (an extern "C" declaration of another signature
    # conflicts with each)
    "byte", "word", "boolean", "String", "Serial", "delay", "delayMicroseconds", "millis",
    "micros", "init", "initVariant", "yield", "pinMode", "digitalWrite", "digitalRead",
    "analogRead", "analogWrite", "analogReference", "tone", "noTone", "pulseIn", "pulseInLong",
    "shiftIn", "shiftOut", "attachInterrupt", "detachInterrupt", "random", "randomSeed", "map",
    "makeWord", "serialEvent",
))
NAME_MAX = 128  # symbol and file names: far below any file system's limit


def check_name(name: str) -> None:
    """AvrmpError unless --name is a C identifier a program can take (C_RESERVED, NAME_MAX)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise AvrmpError(f"--name {name!r} is not a C identifier")
    if name in C_RESERVED or re.match(r"__|_[A-Z]", name):
        raise AvrmpError(f"--name {name}: a C or C++ keyword, a type the header uses, a name "
                         "the program has already or one reserved to the compiler; choose "
                         "another")
    if len(name) > NAME_MAX:  # it names files (NAME.S, NAME.h, NAME.c) too
        raise AvrmpError(f"--name: {len(name)} characters; at most {NAME_MAX}")


@dataclass(frozen=True)
class Spec:
    op: str
    bits: int
    algo: str
    variant: str = "branchfree"
    mcu: str = DEFAULT_MCU
    name: str = ""
    # Algorithm parameters; None means "the algorithm's default".
    levels: int | None = None
    d: int | None = None
    e: int | None = None
    looped: bool = False
    target: str = "avr"

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise AvrmpError(f"unknown target {self.target!r}: choose one of {', '.join(TARGETS)}")
        if self.op not in OPS:
            raise AvrmpError(f"unknown operation {self.op!r}: choose one of {', '.join(OPS)}")
        unit = WORD_BITS if self.target == "arm7tdmi" else 8
        if not isinstance(self.bits, int) or self.bits <= 0 or self.bits % unit:
            raise AvrmpError(f"--bits {self.bits}: must be a positive multiple of {unit}")
        if self.variant not in VARIANTS:
            raise AvrmpError(f"unknown variant {self.variant!r}: choose one of {', '.join(VARIANTS)}")
        get_mcu(self.mcu)
        if self.name:
            check_name(self.name)
        if self.target == "arm7tdmi":
            self._check_arm(get_arm_algorithm(self.algo))
        else:
            self._check_algorithm(get_algorithm(self.algo))

    def _check_arm(self, algo: ArmAlgorithm) -> None:
        """The ARM7TDMI serves multiplication of whole 32-bit words, branch-free."""
        if self.op != "mul":
            raise AvrmpError(f"--target arm7tdmi: {self.op} is not offered; it serves mul")
        words = self.bits // WORD_BITS
        if not algo.min_words <= words <= algo.max_words:
            raise AvrmpError(f"--bits {self.bits}: {algo.name} on the ARM7TDMI supports "
                             f"{WORD_BITS * algo.min_words} to {WORD_BITS * algo.max_words} bits")
        if algo.even_only and words % 2:
            raise AvrmpError(f"--bits {self.bits}: {algo.name} on the ARM7TDMI needs an even "
                             "number of words (a multiple of 64 bits)")
        for param in ("levels", "d", "e"):
            if getattr(self, param) is not None:
                raise AvrmpError(f"--{param} does not apply to {algo.name} on the ARM7TDMI")
        if self.looped:
            raise AvrmpError("--looped: the ARM7TDMI routines are unrolled")
        if self.variant not in algo.variants:
            raise AvrmpError(f"--variant {self.variant}: {algo.name} on the ARM7TDMI offers "
                             f"{', '.join(algo.variants)}")

    def _check_algorithm(self, algo: Algorithm) -> None:
        """What the algorithm offers: its operations, sizes, parameters and variants."""
        if self.op not in algo.builders:
            ops = ", ".join(algo.builders)
            raise AvrmpError(f"--algo {algo.name} does not do {self.op}: it serves {ops}")
        n = self.operand_bytes
        if not algo.min_bytes <= n <= algo.max_bytes:
            raise AvrmpError(f"--bits {self.bits}: {algo.name} supports {8 * algo.min_bytes} to "
                             f"{8 * algo.max_bytes} bits")
        if algo.even_only and n % 2:
            raise AvrmpError(f"--bits {self.bits}: {algo.name} needs an even number of bytes")
        if n % algo.byte_multiple:
            raise AvrmpError(f"--bits {self.bits}: {algo.name} needs a multiple of "
                             f"{8 * algo.byte_multiple} bits")
        for param in ("levels", "d", "e"):
            if getattr(self, param) is not None and param not in algo.accepts:
                raise AvrmpError(f"--{param} does not apply to {algo.name}")
        if self.e is not None and self.e > n:  # (the code would be that of e = n)
            raise AvrmpError(f"--e {self.e}: an operand has {n} bytes to cache: choose at most {n}")
        self._check_looped(algo)
        if self.variant == "consttime":
            raise AvrmpError("--variant consttime is the ARM7TDMI's: on the AVR the branchfree "
                             "routines take constant time (verified: identical cycles and traces)")
        if self.variant not in algo.variants:
            raise AvrmpError(f"--variant {self.variant}: {algo.name} offers "
                             f"{', '.join(algo.variants)}")
        if algo.needs_mul and is_product(self.op) and not get_mcu(self.mcu).has_mul:
            raise AvrmpError(
                f"--mcu {self.mcu} has no hardware multiplier and {algo.name} needs one")

    def _check_looped(self, algo: Algorithm) -> None:
        if self.looped and self.op not in algo.looped_builders:
            raise AvrmpError(f"--looped: {algo.name} has no looped {self.op}")
        for param, hi in algo.looped_max.items() if self.looped else ():
            value = getattr(self, param)
            if value is not None and not 1 <= value <= hi:
                raise AvrmpError(f"--{param} {value}: looped {algo.name} takes 1..{hi} (the "
                                 "loop's window and row share the register file)")

    @property
    def algorithm(self) -> Algorithm:
        return get_algorithm(self.algo)

    @property
    def arm_algorithm(self) -> ArmAlgorithm:
        return get_arm_algorithm(self.algo)

    @property
    def words(self) -> int:
        """Operand words of the target's width (ARM7TDMI: 32 bits)."""
        return self.bits // WORD_BITS

    @property
    def operand_bytes(self) -> int:
        return self.bits // 8

    @property
    def result_bytes(self) -> int:
        return result_bytes(self.op, self.operand_bytes)

    @property
    def symbol(self) -> str:
        if self.name:
            return self.name
        if self.runtime_length:  # one routine serves every length: the name carries no size
            return f"avrmp_{self.op}_{self.algo.replace('-', '_')}"
        tag = {"branchfree": "", "branched": "_br", "consttime": "_ct"}[self.variant]
        loop = "_looped" if self.looped else ""
        arm = "_arm" if self.target == "arm7tdmi" else ""
        return f"avrmp_{self.op}{self.bits}_{self.algo.replace('-', '_')}{arm}{tag}{loop}"

    @property
    def runtime_length(self) -> bool:
        """The routine takes the operand length as a run-time argument (after the pointers)."""
        return self.target == "avr" and self.algorithm.runtime_length

    @property
    def uses_mul(self) -> bool:
        """The AVR routine multiplies with MUL (a product, for a part that has it)."""
        return self.target == "avr" and is_product(self.op) and get_mcu(self.mcu).has_mul

    @property
    def n_inputs(self) -> int:
        return operand_count(self.op)

    def describe(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if v not in (None, (), "", False)}
        if self.target == "avr":
            d.pop("target")
        else:
            d.pop("mcu")
        if self.runtime_length:  # the code is the same for every length: keep the text so too
            d.pop("bits")
            d["length"] = RUNTIME_LENGTH
        return d


def frames_across_calls(spec: Spec) -> bool:
    """Whether spec's routine calls subroutines whose frames lie above their return addresses:
    its code then depends on the part's return-address size."""
    above = spec.algorithm.calls_above
    return above is not None and spec.operand_bytes > above


def return_address_bytes(spec: Spec, mcu: str | None = None) -> int:
    """A return address's size as far as spec's kernel depends on it: the part's (`mcu`, by
    default the spec's own), for a routine with frames across calls; else 2."""
    return get_mcu(mcu or spec.mcu).pc_bytes if frames_across_calls(spec) else 2
