"""Run an ARM7TDMI routine in unicorn (ARM state, the ARMv4T TI925T core model), one call at a
time from an unkind start state, with the cycle timing model of target/arm7tdmi applied to the
executed trace.

One `ArmEmulator` (one Uc) serves every call of a firmware.  A call places the result and the
operands at seeded-random word-aligned addresses in RAM (random bytes around them), sets SP at a
random 8-byte-aligned height, every register the caller does not pass at random (r4-r11 random
sentinels, r3 and r12 too), the N Z C V flags at random and LR to a random return address in a
page of undefined instructions, then runs the routine (AAPCS: r0 the result pointer, r1 A, r2 B,
then the int arguments) until it returns there.  Half the callers, drawn from the seed, are in
Thumb state (LR's bit 0 set): a return that does not interwork (MOV PC, LR or LDM ... PC on this
core) arrives in the wrong state and fails, as does one that sets the bit for an ARM caller.

A code hook, called before each instruction (so Rs and the flags it sees are the instruction's
own), times it with decode.execute and TIMINGS: ABI cycles from entry to the return (the return
instruction included), core cycles for instructions in [core_begin, core_end).  Memory hooks
record the data-address trace (addresses relative to the buffer they fall in, or to the entry SP
for the stack) and, for each access, the SP it may not go below (the lower of SP before and
after its instruction: no red zone, as an interrupt may write below SP), so that a write with a
byte outside the result buffer and the stack the routine holds at that moment, or a read outside
the buffers, that stack and the routine's own image (code, constants, data), is reported.  An unaligned
access (which the ARM7TDMI rotates or aligns, unlike unicorn), an MSR that writes the mode or
the interrupt masks, unmapped accesses, instructions the model does not cover and hangs become a
measurement's `error`, not a traceback.  unicorn was chosen over qemu-user for
this: it calls back before every instruction and memory access in-process, which a cycle model
on the executed trace needs (docs/arm7tdmi-timing.md)."""

from __future__ import annotations

import hashlib
import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import AvrmpError
from ..target.arm7tdmi.decode import AL, Executed, condition_passes, cycles, decode
from ..target.arm7tdmi.isa import SEED001_M, WORST_M, multiplier_steps
from .arm_toolchain import ArmFirmware

try:
    import unicorn
    from unicorn import arm_const
    REGISTERS = [arm_const.UC_ARM_REG_R0 + i for i in range(13)] + [
        arm_const.UC_ARM_REG_SP, arm_const.UC_ARM_REG_LR, arm_const.UC_ARM_REG_PC]
except ImportError:  # the error says how to install it when an emulator is made
    unicorn = arm_const = None
    REGISTERS = []

RAM_BASE = 0x2000_0000
SENTINEL = 0x0F00_0000  # LR at entry (bit 0 set for a Thumb caller): reaching it is the return
THUMB_BIT = 1 << 5  # CPSR.T
PAGE = 0x1000
GUARD = 16  # random bytes at least between buffers
BUFFER_BYTES = 0x1_0000  # RAM for the result and operand buffers
STACK_BYTES = 0x1_0000  # RAM below the highest entry SP
STACK_FILL_MIN = 512  # stack bytes below the entry SP refilled at random before every call
DEFAULT_MAX_INSTRUCTIONS = 1_000_000
UDF = 0xE7F000F0  # fills the sentinel page
STACK_TAG, ABSOLUTE_TAG = 15, 14  # data-trace tags beside the buffers' indices (0 = result)


@dataclass(frozen=True)
class ArmCall:
    """One call: the operands, the result's length, the int arguments after the pointers, the
    seed of its start state (layout, registers, flags, the random bytes in RAM), and whether the
    caller is in Thumb state (its return address has bit 0 set; the routine must return with
    BX to reach it in that state)."""

    operands: tuple[bytes, ...]
    result_len: int
    int_args: tuple[int, ...] = ()
    seed: int = 0
    thumb_caller: bool | None = None  # None: drawn from the seed
    shared: bool = False  # two operands in one buffer (f(r, x, x)): reads of b are reads of a


@dataclass
class ArmMeasurement:
    result: bytes = b""
    abi_cycles: int = 0
    core_cycles: int = 0
    fixed_m_cycles: int = 0  # ABI cycles with every executed multiply at WORST_M steps
    core_seed001_m: int = 0  # core cycles with every executed multiply at SEED001_M steps
    instructions: int = 0
    pc_digest: str = ""
    data_digest: str = ""
    stray_writes: tuple[str, ...] = ()  # where each write outside result and frame landed
    stray_reads: tuple[str, ...] = ()  # each read outside the buffers and the stack it used
    regs_before: tuple[int, ...] = ()  # r4-r11, sp at entry
    regs_after: tuple[int, ...] = ()  # r4-r11, sp on return
    inputs_after: tuple[bytes, ...] = ()
    stack_depth: int = 0  # bytes below the entry SP the routine's SP reached
    error: str = ""  # did not return, unmapped access, an instruction the model refuses
    addresses: dict[str, int] = field(default_factory=dict)  # the call's layout, for messages

    @property
    def returned(self) -> bool:
        return not self.error


@dataclass
class Trace:
    """What the hooks collect during one call."""

    core: tuple[int, int]
    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS
    pcs: list[int] = field(default_factory=list)
    data: list[int] = field(default_factory=list)  # address * 16 + size * 2 + is_write
    abi: int = 0
    core_cycles: int = 0
    m_slack: int = 0  # sum of WORST_M - m over executed multiplies
    core_m_excess: int = 0  # sum of m - SEED001_M over the core's executed multiplies
    min_sp: int = 0
    sp_moved: bool = False  # the last instruction may have written SP
    fault: str = ""
    cur_sp: int = 0  # SP before the instruction running
    floors: list[int] = field(default_factory=list)  # per access: the SP it may not go below
    mark: int = 0  # the first access of the last instruction that may have written SP

    def settle_sp(self, sp: int) -> None:
        """SP after an instruction that may have written it: that instruction's own accesses
        may lie above the lower of its SP before and after (a PUSH stores below the old SP)."""
        self.min_sp = min(self.min_sp, sp)
        floors = self.floors
        for i in range(self.mark, len(floors)):
            floors[i] = min(floors[i], sp)
        self.cur_sp, self.sp_moved = sp, False


@dataclass(frozen=True)
class Varying:
    """What the code hook needs to time an instruction whose cost varies as it runs."""

    cond: int
    rs_reg: int | None  # unicorn's id of the register holding the multiplier operand
    signed: bool
    by_m: tuple[int, ...]  # a multiply's cycles for m = 0..4
    skipped: int  # cycles if its condition fails
    writes_sp: bool


def uc_constants():
    if unicorn is None:
        raise AvrmpError("the Python package unicorn is not installed: pip install unicorn")
    return unicorn, arm_const


class ArmEmulator:
    """Calls of one firmware in one Uc, reused across calls (translations stay cached)."""

    def __init__(self, fw: ArmFirmware, buffer_bytes: int = BUFFER_BYTES,
                 stack_bytes: int = STACK_BYTES) -> None:
        uc_mod, arm = uc_constants()
        self.fw, self.buffer_bytes, self.stack_bytes = fw, buffer_bytes, stack_bytes
        self.uc = uc = uc_mod.Uc(uc_mod.UC_ARCH_ARM, uc_mod.UC_MODE_ARM)
        uc.ctl_set_cpu_model(arm.UC_CPU_ARM_TI925T)  # ARMv4T: no v5 instruction runs
        self.map_image(uc_mod)
        uc.mem_map(SENTINEL, PAGE, uc_mod.UC_PROT_READ | uc_mod.UC_PROT_EXEC)
        uc.mem_write(SENTINEL, UDF.to_bytes(4, "little") * (PAGE // 4))
        uc.mem_map(RAM_BASE, buffer_bytes + stack_bytes)
        uc.mem_write(RAM_BASE, random.Random(fw.entry).randbytes(buffer_bytes + stack_bytes))
        self.cpsr_mode = uc.reg_read(arm.UC_ARM_REG_CPSR) & 0x0FFF_FFFF
        self.deepest = 0
        self.trace = Trace(fw.core)
        self.cache: dict[int, tuple[int, bool, Varying | None]] = {}
        uc.hook_add(uc_mod.UC_HOOK_CODE, self.code_hook())
        uc.hook_add(uc_mod.UC_HOOK_MEM_READ | uc_mod.UC_HOOK_MEM_WRITE, self.memory_hook())
        uc.hook_add(uc_mod.UC_HOOK_MEM_INVALID, self.invalid_hook())

    def map_image(self, uc_mod) -> None:
        """The firmware's segments, pages rounded out; writable only if a segment is."""
        pages: dict[int, bool] = {}
        for s in self.fw.segments:
            for page in range(s.address // PAGE, (s.address + len(s.data) + PAGE - 1) // PAGE):
                pages[page] = pages.get(page, False) or s.writable
        self.writable_pages = {page for page, writable in pages.items() if writable}
        # its code, constants and data (a literal pool, a GOT, a routine placed in RAM)
        self.image = [(s.address, s.address + len(s.data)) for s in self.fw.segments]
        for page, writable in sorted(pages.items()):
            prot = uc_mod.UC_PROT_READ | uc_mod.UC_PROT_EXEC
            self.uc.mem_map(page * PAGE, PAGE, prot | (uc_mod.UC_PROT_WRITE if writable else 0))
        for s in self.fw.segments:
            self.uc.mem_write(s.address, s.data)

    def code_hook(self):
        """The per-instruction hook: lean, the classification cached per address (on read-only
        pages, where the word at an address never changes), only Rs and the flags read as it
        runs, and only where they matter."""
        cache, cpsr_reg, sp_reg = self.cache, arm_const.UC_ARM_REG_CPSR, arm_const.UC_ARM_REG_SP

        def hook(uc, address, size, _data) -> None:
            t = self.trace
            t.pcs.append(address)
            if t.sp_moved:
                t.settle_sp(uc.reg_read(sp_reg))
            cost, in_core, v = cache.get(address) or self.learn(address, size)
            if v is not None:  # conditional, multiply or writing SP: timed as it runs
                if v.cond != AL and not condition_passes(v.cond, uc.reg_read(cpsr_reg)):
                    cost = v.skipped
                elif v.rs_reg is not None:
                    m = multiplier_steps(uc.reg_read(v.rs_reg), v.signed)
                    cost = v.by_m[m]
                    t.m_slack += WORST_M - m
                    t.core_m_excess += (m - SEED001_M) if in_core else 0
                if v.writes_sp:
                    t.sp_moved, t.mark = True, len(t.floors)
            t.abi += cost
            if in_core:
                t.core_cycles += cost
            if len(t.pcs) > t.max_instructions:
                uc.emu_stop()

        return hook

    def learn(self, address: int, size: int) -> tuple[int, bool, Varying | None]:
        """Decode the instruction at `address` once: (its cost if it runs, m aside; whether it is
        in the core; None if that cost never varies, else what the hook needs to time it)."""
        if size != 4:
            raise AvrmpError("the CPU entered Thumb state: the ARM7TDMI model times ARM state "
                             "only; keep to ARM state (BX to an even address)")
        d = decode(int.from_bytes(self.uc.mem_read(address, 4), "little"))
        if d.name == "msr" and d.word & (1 << 22 | 1 << 16):
            raise AvrmpError("MSR that writes the SPSR or the CPSR's control field (mode, "
                             "interrupt masks), the caller's state, is refused: write the flags "
                             "only (MSR CPSR_f)")
        begin, end = self.trace.core
        cost = cycles(Executed(d.timing, True, d.registers))  # as it runs, m aside
        varying = None
        if d.cond != AL or d.rs is not None or d.writes_sp:
            by_m = tuple(cycles(Executed(d.timing, True, d.registers, m)) for m in range(5))
            skipped = cycles(Executed(d.timing, False, d.registers))
            rs_reg = None if d.rs is None else REGISTERS[d.rs]
            varying = Varying(d.cond, rs_reg, d.signed, by_m, skipped, d.writes_sp)
        entry = (cost, begin <= address < end, varying)
        if address // PAGE not in self.writable_pages:  # code that may change is decoded anew
            self.cache[address] = entry
        return entry

    def memory_hook(self):
        write_access = unicorn.UC_MEM_WRITE

        def hook(uc, access, address, size, value, _data) -> None:
            t = self.trace
            if address & (size - 1) and not t.fault:
                kind = "write" if access == write_access else "read"
                t.fault = (f"unaligned {size}-byte {kind} at 0x{address:08x}: the ARM7TDMI "
                           "rotates such a load and aligns such a store, which the emulator "
                           "does not model: keep accesses aligned")
                uc.emu_stop()
            t.data.append(address * 16 + size * 2 + (access == write_access))
            t.floors.append(t.cur_sp)

        return hook

    def invalid_hook(self):
        kinds = {unicorn.UC_MEM_READ_UNMAPPED: "read of unmapped memory",
                 unicorn.UC_MEM_WRITE_UNMAPPED: "write to unmapped memory",
                 unicorn.UC_MEM_FETCH_UNMAPPED: "jump to unmapped memory",
                 unicorn.UC_MEM_WRITE_PROT: "write to read-only memory (the code)",
                 unicorn.UC_MEM_FETCH_PROT: "jump to non-executable memory",
                 unicorn.UC_MEM_READ_PROT: "read of unreadable memory"}
        pc_reg = arm_const.UC_ARM_REG_PC

        def hook(uc, access, address, size, value, _data) -> bool:
            what = kinds.get(access, "invalid memory access")
            self.trace.fault = (f"{what} at 0x{address:08x} by the instruction at "
                                f"0x{uc.reg_read(pc_reg):x}")
            return False

        return hook

    def call(self, call: ArmCall, max_instructions: int = DEFAULT_MAX_INSTRUCTIONS
             ) -> ArmMeasurement:
        """Run one call from its seeded start state and measure it."""
        rng = random.Random(call.seed)
        sizes = [call.result_len] + [len(o) for o in call.operands]
        region = (RAM_BASE + GUARD, RAM_BASE + self.buffer_bytes - GUARD)
        if call.shared:
            at = place_buffers(rng, region, sizes[:2])
            at += at[1:] * (len(sizes) - 2)
        else:
            at = place_buffers(rng, region, sizes)
        top = RAM_BASE + self.buffer_bytes + self.stack_bytes - 64
        sp = rng.randrange(top - self.stack_bytes // 4, top) & ~7
        self.fill(rng, at, sizes, call, sp)
        thumb = call.thumb_caller if call.thumb_caller is not None else rng.random() < 0.5
        ret = SENTINEL + 4 * rng.randrange(PAGE // 4)  # a random return address
        before = self.start_state(rng, call, at, sp, ret | thumb)
        self.trace = t = Trace(self.fw.core, max_instructions, min_sp=sp, cur_sp=sp)
        error = self.run(t, thumb, ret)
        return self.measure(t, call, at, sp, before, error)

    def fill(self, rng: random.Random, at: Sequence[int], sizes: Sequence[int], call: ArmCall,
             sp: int) -> None:
        """Random bytes round every buffer and below SP; the operands in theirs."""
        uc = self.uc
        for address, size in zip(at, sizes):
            uc.mem_write(address - GUARD, rng.randbytes(size + 2 * GUARD))
        for address, operand in zip(at[1:], call.operands):
            uc.mem_write(address, operand)
        below = max(STACK_FILL_MIN, self.deepest + 64)
        low = max(RAM_BASE + self.buffer_bytes, sp - below)
        uc.mem_write(low, rng.randbytes(sp + 64 - low))

    def start_state(self, rng: random.Random, call: ArmCall, at: Sequence[int],
                    sp: int, lr: int) -> tuple[int, ...]:
        """Registers and flags at entry; returns r4-r11 and SP as the caller expects them back."""
        args = [at[0], *at[1:], *call.int_args]
        if len(args) > 4:
            raise AvrmpError(f"{len(args)} arguments: the ARM call harness passes at most 4 "
                             "(r0-r3): use fewer int arguments")
        values = [*args, *(rng.getrandbits(32) for _ in range(13 - len(args)))]
        uc = self.uc
        for reg, value in zip(REGISTERS, values):
            uc.reg_write(reg, value)
        uc.reg_write(arm_const.UC_ARM_REG_SP, sp)
        uc.reg_write(arm_const.UC_ARM_REG_LR, lr)
        uc.reg_write(arm_const.UC_ARM_REG_CPSR, self.cpsr_mode | rng.getrandbits(4) << 28)
        return (*values[4:12], sp)

    def run(self, t: Trace, thumb_caller: bool, ret: int) -> str:
        """Emulate from the entry to the return address `ret`; the error, or "" if it returned
        (in the caller's state)."""
        try:
            self.uc.emu_start(self.fw.entry, ret)
        except AvrmpError as exc:
            return f"at 0x{t.pcs[-1]:x}: {exc}"
        except unicorn.UcError as exc:
            pc = self.uc.reg_read(arm_const.UC_ARM_REG_PC)
            return t.fault or f"{exc} at 0x{pc:x}"
        if t.fault:
            return t.fault
        pc = self.uc.reg_read(arm_const.UC_ARM_REG_PC)
        if pc != ret:
            return (f"did not return within {t.max_instructions} instructions (a hang, or "
                    "a routine far slower than its size needs)")
        thumb = bool(self.uc.reg_read(arm_const.UC_ARM_REG_CPSR) & THUMB_BIT)
        if thumb_caller and not thumb:
            return ("returned in ARM state to a Thumb caller (on the ARM7TDMI only BX "
                    "interworks: return with BX LR)")
        if thumb and not thumb_caller:
            return "returned in Thumb state to an ARM caller (return with BX LR as it came)"
        return ""

    def measure(self, t: Trace, call: ArmCall, at: Sequence[int], sp: int,
                before: tuple[int, ...], error: str) -> ArmMeasurement:
        uc, arm = self.uc, arm_const
        t.settle_sp(uc.reg_read(arm.UC_ARM_REG_SP))
        after = tuple(uc.reg_read(REGISTERS[i]) for i in range(4, 12))
        sizes = [call.result_len] + [len(o) for o in call.operands]
        regions = [(a, a + s) for a, s in zip(at, sizes)]
        data, stray, stray_reads = relative_trace(t, regions, sp, self.image)
        self.deepest = max(self.deepest, sp - t.min_sp)
        names = ["result"] + [f"operand {chr(65 + i)}" for i in range(len(call.operands))]
        return ArmMeasurement(
            result=bytes(uc.mem_read(at[0], call.result_len)),
            abi_cycles=t.abi, core_cycles=t.core_cycles, fixed_m_cycles=t.abi + t.m_slack,
            core_seed001_m=t.core_cycles - t.core_m_excess,
            instructions=len(t.pcs), pc_digest=digest(t.pcs), data_digest=digest(data),
            stray_writes=tuple(describe(a, regions, names, sp) for a in stray),
            stray_reads=tuple(describe(a, regions, names, sp) for a in stray_reads),
            regs_before=before, regs_after=(*after, uc.reg_read(arm.UC_ARM_REG_SP)),
            inputs_after=tuple(bytes(uc.mem_read(a, len(o)))
                               for a, o in zip(at[1:], call.operands)),
            stack_depth=sp - t.min_sp, error=error,
            addresses={**dict(zip(names, at)), "entry SP": sp})


def place_buffers(rng: random.Random, region: tuple[int, int], sizes: Sequence[int]) -> list[int]:
    """Word-aligned start addresses for the buffers inside region, in a random order with random
    gaps of at least GUARD bytes."""
    rounded = [(s + 3) & ~3 for s in sizes]
    slack = (region[1] - region[0] - sum(s + GUARD for s in rounded)) // 4
    if slack < 0:
        raise AvrmpError(f"buffers of {sum(sizes)} bytes do not fit the emulator's "
                         f"{region[1] - region[0]} bytes of RAM: use smaller operands")
    order = list(range(len(sizes)))
    rng.shuffle(order)
    cuts = sorted(rng.randint(0, slack) for _ in order)
    at, p, last = [0] * len(sizes), region[0], 0
    for i, cut in zip(order, cuts):
        p += 4 * (cut - last)
        last = cut
        at[i] = p
        p += rounded[i] + GUARD
    return at


def relative_trace(t: Trace, regions: Sequence[tuple[int, int]], sp: int,
                   image: Sequence[tuple[int, int]]) -> tuple[list[int], list[int], list[int]]:
    """The data-address trace with addresses made relative (tag << 40 | offset << 4 | size and
    kind, the tag a buffer's index, STACK_TAG for offsets from the entry SP, ABSOLUTE_TAG
    elsewhere); the addresses of writes with a byte outside the result buffer and the stack the
    routine holds (from its SP at that access to the entry SP: no byte below SP, where an
    interrupt would write); and those of reads with a byte outside the buffers, that stack and
    the routine's own image (its code, constants and data)."""
    out, stray, stray_reads = [], [], []
    result = regions[0]
    for key, floor in zip(t.data, t.floors):
        address, low = key >> 4, key & 15
        span = (address, address + (low >> 1))
        for tag, (a, b) in enumerate(regions):
            if a <= address < b:
                out.append(tag << 40 | (address - a) << 4 | low)
                break
        else:
            if t.min_sp - PAGE <= address < sp + PAGE:
                out.append(STACK_TAG << 40 | ((address - sp) & 0xFFFF_FFFF) << 4 | low)
            else:
                out.append(ABSOLUTE_TAG << 40 | key)
        held = (floor, sp)
        if low & 1:
            if not (_within(span, result) or _within(span, held)):
                stray.append(address)
        elif not any(_within(span, r) for r in (*regions, held, *image)):
            stray_reads.append(address)
    return out, stray, stray_reads


def _within(span: tuple[int, int], region: tuple[int, int]) -> bool:
    return region[0] <= span[0] and span[1] <= region[1]


def describe(address: int, regions: Sequence[tuple[int, int]], names: Sequence[str],
             sp: int) -> str:
    for name, (a, b) in zip(names, regions):
        if a - GUARD <= address < b + GUARD:
            return f"{name}{address - a:+d}"
    if abs(address - sp) < 4 * PAGE:
        return f"entry SP{address - sp:+d}"
    return f"0x{address:08x}"


def digest(values: list[int]) -> str:
    return hashlib.blake2b(array("Q", values).tobytes(), digest_size=16).hexdigest()
