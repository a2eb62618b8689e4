"""Virtual registers and their allocation to AVR registers.

Kernels with more live bytes than registers (Karatsuba in registers, combination passes) are written
over virtual one-byte registers (`V`).  The allocator walks the straight-line code once and assigns
physical registers with Belady's rule (evict the value needed farthest in the future).  An evicted
value that is still in memory (an operand loaded with LDD, a result already stored with STD) is simply
reloaded later; any other value is spilled with STD to a scratch slot the kernel lends (part of the
result buffer not yet written), and reloaded with LDD.  Loads and stores do not touch the flags, so
inserted spill code never breaks a carry chain.  The only control flow is the signed arm
(VProgram.arm_begin): allocated once, emitted as an adding and a subtracting copy.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .isa import _SPEC, Instr, IsaError, Mem, instr_effects
from .program import Comment, Emitter, Label, Program


class V:
    """A virtual one-byte register."""

    __slots__ = ("id", "name")

    def __init__(self, id: int, name: str) -> None:
        self.id, self.name = id, name

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass
class VInstr:
    mnemonic: str
    operands: tuple
    comment: str = ""
    signed: bool = False  # ADD/ADC here, SUB/SBC in the subtracting copy of a SignedArm
    # With `signed`: what the subtracting copy has instead, (mnemonic, operands), or () for
    # nothing (None: the SUB/SBC counterpart).
    alt: tuple | None = None


# In a SignedArm's subtracting copy: what each signed instruction becomes.
_SUBTRACTING = {"add": "sub", "adc": "sbc"}


_PTRS = {"X": (26, 27), "Y": (28, 29), "Z": (30, 31)}
_PTR_OF = {r: ptr for ptr, pair in _PTRS.items() for r in pair}
_BRANCHES = {"brts", "brtc", "brne", "breq", "brcc", "brcs", "brmi", "brpl"}
# Register kinds in isa._SPEC operand strings.
_REG_KINDS = "rhmwa"
# Instructions whose first register operand is written without being read.
_DEF_ONLY = {"ldi", "ser", "clr", "pop", "in", "lds", "ld", "ldd", "mov"}
# Instructions that only read their register operands.
_READ_ONLY = {"st", "std", "sts", "push", "out", "cp", "cpc", "cpi", "tst", "bst", "sbrc", "sbrs",
              "mul", "muls", "mulsu"}
# With both operands the same register these only define it (eor r,r = clr; sbc r,r = -C).
_SAME_DEFINES = {"eor", "sub", "sbc"}


def _reads_writes(ins: VInstr) -> tuple[list[V], list[V]]:
    if ins.alt:  # both copies of a signed arm use the same registers
        r0, w0 = _reads_writes(VInstr(ins.mnemonic, ins.operands))
        r1, w1 = _reads_writes(VInstr(ins.alt[0], ins.alt[1]))
        return list(dict.fromkeys(r0 + r1)), list(dict.fromkeys(w0 + w1))
    if ins.mnemonic == "clr_pair":
        return [], list(ins.operands)
    if ins.mnemonic == "copy_pair":
        d0, d1, s0, s1 = ins.operands
        return [v for v in (s0, s1) if isinstance(v, V)], [d0, d1]
    kinds = _SPEC[ins.mnemonic][0]
    regs = [(k, v) for k, v in zip(kinds, ins.operands) if k in _REG_KINDS]
    vs = [v for _, v in regs if isinstance(v, V)]
    if not vs:
        return [], []
    m = ins.mnemonic
    first = regs[0][1]
    if m in _READ_ONLY:
        return vs, []
    if m in _SAME_DEFINES and len(regs) == 2 and regs[0][1] is regs[1][1]:
        return [], [first] if isinstance(first, V) else []
    if m in _DEF_ONLY:
        writes = [first] if isinstance(first, V) else []
        return [v for _, v in regs[1:] if isinstance(v, V)], writes
    writes = [first] if isinstance(first, V) else []
    return vs, writes


class VProgram(Emitter):
    """Like Program, but register operands may be virtual registers."""

    def __init__(self) -> None:
        self.items: list[VInstr | Label | Comment | Lend | Release | Claim | SignedArm] = []
        self._count = 0
        self._labels = 0

    def v(self, name: str = "t") -> V:
        self._count += 1
        return V(self._count, f"{name}{self._count}")

    def vs(self, n: int, name: str) -> list[V]:
        return [self.v(f"{name}{i}_") for i in range(n)]

    def emit(self, mnemonic: str, *operands: object, comment: str = "") -> None:
        if mnemonic not in _SPEC:
            raise IsaError(f"unknown instruction {mnemonic!r}")
        self.items.append(VInstr(mnemonic, tuple(operands), comment))

    def copy_pair(self, d0, d1, s0, s1, comment: str = "") -> None:
        """d1:d0 = s1:s0; one MOVW when the allocator can pair the registers."""
        self.items.append(VInstr("copy_pair", (d0, d1, s0, s1), comment))

    def clr_pair(self, d0: V, d1: V) -> None:
        """d0 = d1 = 0, in an aligned register pair if one is free (a MOVW source later)."""
        self.items.append(VInstr("clr_pair", (d0, d1)))

    def signed(self, mnemonic: str, *operands: object, comment: str = "") -> None:
        """ADD or ADC inside a SignedArm: it becomes SUB or SBC in the arm's subtracting copy."""
        if mnemonic not in _SUBTRACTING:
            raise IsaError(f"{mnemonic} has no subtracting counterpart")
        self.items.append(VInstr(mnemonic, tuple(operands), comment, signed=True))

    def arm_pair(self, add: tuple, sub: tuple, comment: str = "") -> None:
        """Inside a SignedArm: (mnemonic, *operands) `add` in the adding copy, `sub` in the
        subtracting one (an empty tuple: nothing there)."""
        alt = (sub[0], tuple(sub[1:])) if sub else ()
        self.items.append(VInstr(add[0], tuple(add[1:]), comment, signed=True, alt=alt))

    def arm_begin(self) -> None:
        """Code up to arm_end is emitted twice: as written if the T flag is set, with the signed
        instructions subtracting if it is clear.  Both copies have the same registers, spills and
        cycles (one NOP balances the jump), so any code may go inside; no labels."""
        self.items.append(SignedArm(True))

    def arm_end(self) -> None:
        self.items.append(SignedArm(False))

    def label(self, name: str) -> None:
        self.items.append(Label(name))

    def lend(self, slots) -> None:
        self.items.append(Lend(tuple(slots)))

    def release(self, *regs: int) -> None:
        self.items.append(Release(tuple(regs)))

    def push_pointer(self, ptr: str) -> None:
        """Push a pointer; its registers join the pool until pop_pointer.  Memory reached
        through it keeps its contents meanwhile: values there are reloaded after the pop, not
        rescued now."""
        lo, hi = _PTRS[ptr]
        self.push(lo)
        self.push(hi)
        self.items.append(Release((lo, hi), until_claim=True))

    def pop_pointer(self, ptr: str) -> None:
        """The pointer's registers leave the pool again (values there move out by MOV) and it is
        popped; memory lent through it is spill room again."""
        self.items.append(Claim(_PTRS[ptr]))


@dataclass(frozen=True)
class Lend:
    """From here on the allocator may spill into these memory bytes (until the code stores there)."""

    slots: tuple[Mem, ...]


@dataclass(frozen=True)
class SignedArm:
    """Start (begin true) or end of a signed arm (see VProgram.arm_begin)."""

    begin: bool


@dataclass(frozen=True)
class Release:
    """From here on these physical registers (a pointer no longer needed) join the pool."""

    regs: tuple[int, ...]
    until_claim: bool = False


@dataclass(frozen=True)
class Claim:
    """These physical registers leave the pool again and are popped (VProgram.pop_pointer)."""

    regs: tuple[int, ...]


class AllocationError(Exception):
    pass


@dataclass
class _State:
    reg_of: dict[int, int] = field(default_factory=dict)  # V.id -> physical register
    holder: dict[int, V] = field(default_factory=dict)  # physical register -> V
    clean: dict[int, Mem] = field(default_factory=dict)  # V.id -> memory holding its value


def allocate(
    vp: VProgram,
    pool: Sequence[int],
    out: Program,
    spill_slots: Iterable[Mem] = (),
    live_out: Iterable[V] = (),
    labels_from: Program | None = None,
    defragment: bool = False,
    stats: dict | None = None,
    clean_bias: int = 0,
) -> dict[int, int]:
    """Emit `vp` into `out` with physical registers from `pool`.  Returns V.id -> register for the
    values in `live_out` (kept in registers at the end).  Labels are made unique through
    `labels_from` (default: `out`).  defragment: when a MOVW target finds no free aligned pair,
    move a value out of a half-used pair first (see _defragment).  stats, if given, counts the
    pair copies that had to be split into two MOVs ("split_pairs").  clean_bias: evicting a value
    whose memory copy is valid costs a reload only, one that must be spilled a store too; an
    eviction candidate counts as needed this many instructions later if it is clean."""
    items = vp.items
    effects: list[tuple[list[V], list[V]]] = [
        _reads_writes(it) if isinstance(it, VInstr) else ([], []) for it in items
    ]
    live_out_ids = {v.id for v in live_out}
    uses: dict[int, list[int]] = {}
    for pos, (reads, writes) in enumerate(effects):
        for v in reads:
            uses.setdefault(v.id, []).append(pos)
    end = len(items)
    for vid in live_out_ids:
        uses.setdefault(vid, []).append(end)
    # Where the kernel's own stores overwrite a scratch slot: a spill there must be dead by then.
    stores: dict[Mem, list[int]] = {}
    for pos, it in enumerate(items):
        if isinstance(it, VInstr) and it.mnemonic == "std":
            stores.setdefault(it.operands[0], []).append(pos)

    def first_store(mem: Mem, after: int) -> int:
        at = stores.get(mem, [])
        i = bisect.bisect_left(at, after)
        return at[i] if i < len(at) else end + 1

    spill_slots = list(spill_slots)
    slot_free_until: dict[Mem, int] = {m: first_store(m, 0) for m in spill_slots}
    slots_in_use: dict[Mem, int] = {}  # slot -> V.id spilled there
    # A value headed for a lent slot (its final store) can be spilled straight there; that final
    # store then becomes redundant and is left out.
    final_store: dict[int, tuple[int, Mem]] = {}
    for pos in range(len(items) - 1, -1, -1):
        it = items[pos]
        if isinstance(it, VInstr) and it.mnemonic == "std" and isinstance(it.operands[1], V):
            final_store.setdefault(it.operands[1].id, (pos, it.operands[0]))
    # A register cleared once and then only read (a zero register) is never spilled: evicting it
    # is free and CLR brings it back (CLR leaves C alone, and no block tests Z across it).
    writers: dict[int, list[str]] = {}
    for pos, (reads, writes) in enumerate(effects):
        for v in writes:
            writers.setdefault(v.id, []).append(items[pos].mnemonic)
    remat = {vid for vid, ms in writers.items() if ms == ["clr"]}
    # Values some instruction needs in r16..r31 (SUBI, ANDI, ...) live there all along.
    high = {o.id for it in items if isinstance(it, VInstr) and it.mnemonic in _SPEC
            for kind, o in zip(_SPEC[it.mnemonic][0], it.operands)
            if kind == "h" and isinstance(o, V)}
    st = _State()
    by_id = {v.id: v for reads, writes in effects for v in (*reads, *writes)}
    free = list(pool)
    cursor = {vid: 0 for vid in uses}

    suspended: dict[str, int] = {}  # pointer released until_claim -> position of its Claim

    def back_at(reg: int) -> int:
        """Where a pushed pointer claims this register back (10**9: never)."""
        return suspended.get(_PTR_OF.get(reg, ""), 10**9)

    def free_pair() -> int | None:
        """An aligned pair of free registers that no pushed pointer will claim back."""
        return next((r for r in sorted(free) if r % 2 == 0 and r + 1 in free
                     and back_at(r) == 10**9), None)

    # Loads (LDD) whose value has not been read since, by value: evicting such a value drops
    # its load, for the reload where it is used does the work (see drop_unread_load).
    fresh: dict[int, int] = {}

    def note_load(v: V) -> None:
        if arm_start is None:  # an arm's code is rebuilt at its end: its indices do not last
            fresh[v.id] = len(out.items) - 1

    def drop_unread_load(v: V, reg: int) -> None:
        """v leaves reg unread since its load: the load goes, unless something the allocator
        emitted since (a MOV making room, say) reads reg."""
        idx = fresh.pop(v.id, None)
        if idx is None or out.items[idx].operands[0] != reg:
            return
        if any(reg in instr_effects(i.mnemonic, i.operands)[0]
               for i in out.items[idx + 1:] if isinstance(i, Instr)):
            return
        out.items[idx] = Comment(f"{v.name} is loaded where it is used")

    def clean_at(vid: int, pos: int) -> bool:
        """Whether evicting vid needs no store: its memory copy can be reloaded when needed."""
        if vid in remat:
            return True
        mem = st.clean.get(vid)
        return mem is not None and (mem.ptr not in suspended
                                    or next_use(vid, pos) > suspended[mem.ptr])

    def next_use(vid: int, pos: int) -> int:
        lst = uses.get(vid, [])
        i = cursor.get(vid, 0)
        while i < len(lst) and lst[i] < pos:
            i += 1
        cursor[vid] = i
        return lst[i] if i < len(lst) else 10**9

    def last_use(vid: int) -> int:
        lst = uses.get(vid, [])
        return lst[-1] if lst else -1

    def free_slot(vid: int) -> None:
        for m, holder in list(slots_in_use.items()):
            if holder == vid:
                del slots_in_use[m]

    def release(reg: int) -> None:
        v = st.holder.pop(reg)
        del st.reg_of[v.id]
        free.append(reg)

    def take(pos: int, pinned: set[int], want_h: bool = False, death: int | None = None) -> int:
        cands = [r for r in free if r >= 16] if want_h else free
        if want_h and not cands and free:  # make room up high by one MOV rather than a spill
            movable = [r for r, v in st.holder.items()
                       if r >= 16 and v.id not in pinned and v.id not in high]
            if movable:
                reg = max(movable, key=lambda r: next_use(st.holder[r].id, pos))
                v = st.holder.pop(reg)
                to = min(free, key=lambda r: (back_at(r) < last_use(v.id), r))
                free.remove(to)
                out.mov(to, reg, comment=f"move {v.name}: its register is needed up high")
                st.reg_of[v.id], st.holder[to] = to, v
                return reg
        if cands:
            reg = cands[0]
            if death is not None:
                # Pair-friendly: fill a hole whose partner is freed about when this value dies,
                # so aligned pairs (MOVW targets) come free whole; break a free pair last.
                # A pushed pointer's registers only for values dead before it comes back.
                def score(r: int) -> tuple:
                    back = death > back_at(r)
                    if r ^ 1 in free:
                        return (back, 1, 0)
                    partner = st.holder.get(r ^ 1)  # None: outside the pool, never pairs
                    return (back, 0, abs(last_use(partner.id) - death) if partner else 0)
                reg = min(cands, key=score)
            free.remove(reg)
            return reg
        victims = [
            (next_use(v.id, pos), clean_at(v.id, pos), r)
            for r, v in st.holder.items()
            if v.id not in pinned and (not want_h or r >= 16)
        ]
        if not victims:
            raise AllocationError("no register left to evict")
        # Belady's choice, except that with no free spill slot a clean value must go first.
        spill_scarce = not any(
            m not in slots_in_use for m, until in slot_free_until.items() if until > pos
        )
        nu, _, reg = max(victims, key=lambda v: (v[1], v[0]) if spill_scarce
                         else (v[0] + (clean_bias if v[1] else 0), v[1], v[2]))
        v = st.holder[reg]
        if nu < 10**9 and not clean_at(v.id, pos):
            slot = None
            store_pos, home = final_store.get(v.id, (-1, None))
            if (home in slot_free_until and home not in slots_in_use
                    and slot_free_until[home] == store_pos > pos):
                slot = home
            slot = slot or next(
                (m for m, until in slot_free_until.items()
                 if m not in slots_in_use and until > last_use(v.id)),
                None,
            )
            if slot is None:
                raise AllocationError(f"no spill slot for {v} (kernel must lend more scratch)")
            out.std(slot, reg, comment=f"spill {v.name}")
            slots_in_use[slot] = v.id
            st.clean[v.id] = slot
        else:
            drop_unread_load(v, reg)
        release(reg)
        free.remove(reg)
        return reg

    def rescue(ptrs: set[str], pos: int, pinned: set[int]) -> None:
        """A pointer is about to change: values whose only copy is reached through it come back
        into registers first."""
        for vid, mem in list(st.clean.items()):
            if mem.ptr in ptrs and vid not in st.reg_of and next_use(vid, pos) < 10**9:
                v = by_id[vid]
                place(v, pos, pinned | {vid}, reload=True)

    def place(v: V, pos: int, pinned: set[int], reload: bool) -> int:
        reg = st.reg_of.get(v.id)
        if reg is not None:
            return reg
        reg = take(pos, pinned, want_h=v.id in high, death=last_use(v.id))
        if reload:
            mem = st.clean.get(v.id)
            if v.id in remat:
                out.clr(reg, comment=f"recreate {v.name}")
            elif mem is None:
                raise AllocationError(f"{v} read before it was defined")
            else:
                out.ldd(reg, mem, comment=f"reload {v.name}")
                note_load(v)
        st.reg_of[v.id] = reg
        st.holder[reg] = v
        return reg

    arm_start: int | None = None  # where the current signed arm's code begins in `out`
    arm_signed: dict[int, tuple | None] = {}  # its signed instructions in `out` -> their alt
    labels: dict[str, str] = {}  # block-local label -> unique label in `out`

    def label_of(name: str) -> str:
        if name not in labels:
            labels[name] = (labels_from or out).new_label(f"{name}_")
        return labels[name]

    for pos, it in enumerate(items):
        if isinstance(it, Label):
            out.label(label_of(it.name))
            continue
        if isinstance(it, Comment):
            out.items.append(it)
            continue
        if isinstance(it, Release) and it.until_claim:
            ptrs = {p for p, pair in _PTRS.items() if set(pair) <= set(it.regs)}
            claim = next(q for q in range(pos, end) if isinstance(items[q], Claim)
                         and set(items[q].regs) == set(it.regs))
            for ptr in ptrs:
                suspended[ptr] = claim
            for vid, mem in list(st.clean.items()):  # needed before the claim: back in now
                if mem.ptr in ptrs and vid not in st.reg_of and next_use(vid, pos) < claim:
                    place(by_id[vid], pos, {vid}, reload=True)
            for m in list(slot_free_until):  # slots in use keep their values (slots_in_use)
                if m.ptr in ptrs:
                    del slot_free_until[m]
            free.extend(r for r in it.regs if r not in free and r not in st.holder)
            continue
        if isinstance(it, Release):
            rescue({p for p, pair in _PTRS.items() if set(pair) & set(it.regs)}, pos, set())
            for m in list(slot_free_until):  # memory reached through that pointer is gone
                if set(_PTRS[m.ptr]) & set(it.regs) and m not in slots_in_use:
                    del slot_free_until[m]
            for vid, mem in list(st.clean.items()):
                if set(_PTRS[mem.ptr]) & set(it.regs):
                    del st.clean[vid]
            free.extend(r for r in it.regs if r not in free and r not in st.holder)
            continue
        if isinstance(it, Claim):
            for r in it.regs:
                if r in free:
                    free.remove(r)
            lo = it.regs[0]
            pair = free_pair()
            if len(it.regs) == 2 and pair is not None and all(r in st.holder for r in it.regs):
                for r, to in ((lo, pair), (lo + 1, pair + 1)):  # both held: one MOVW
                    v = st.holder.pop(r)
                    free.remove(to)
                    st.reg_of[v.id], st.holder[to] = to, v
                out.movw(pair, lo, comment="move both out: the pointer comes back")
            for r in it.regs:
                v = st.holder.get(r)
                if v is not None:
                    release(r)
                    free.remove(r)
                    to = place(v, pos, {v.id}, reload=False)
                    out.mov(to, r, comment=f"move {v.name}: the pointer comes back")
            for r in reversed(it.regs):
                out.pop(r)
            for ptr in [q for q, pair in _PTRS.items() if set(pair) <= set(it.regs)]:
                suspended.pop(ptr, None)
            for m in spill_slots:  # lent through the restored pointer: room again
                if set(_PTRS[m.ptr]) <= set(it.regs) and first_store(m, pos) > pos:
                    slot_free_until[m] = first_store(m, pos)
            continue
        if isinstance(it, Lend):
            for m in it.slots:
                slot_free_until[m] = first_store(m, pos)
            continue
        if isinstance(it, SignedArm):
            if it.begin:
                arm_start, arm_signed = len(out.items), {}
            else:
                _emit_signed_arm(out, arm_start, arm_signed, labels_from or out)
                arm_start = None
            continue
        reads, writes = effects[pos]
        pinned = {v.id for v in reads} | {v.id for v in writes}
        if it.mnemonic in _BRANCHES:
            raise AllocationError("a branch in virtual-register code: use a signed arm")
        for v in reads:
            place(v, pos, pinned, reload=True)
            fresh.pop(v.id, None)
        if it.mnemonic == "copy_pair":
            if not _emit_copy_pair(it, st, free, out, pos, pinned, place, last_use, defragment,
                                   back_at) \
                    and stats is not None:
                stats["split_pairs"] = stats.get("split_pairs", 0) + 1
        elif it.mnemonic == "clr_pair":
            d0, d1 = it.operands
            pair = free_pair()
            if pair is not None:
                for v, r in ((d0, pair), (d1, pair + 1)):
                    free.remove(r)
                    st.reg_of[v.id] = r
                    st.holder[r] = v
            for v in (d0, d1):
                out.clr(place(v, pos, pinned, reload=False))
        else:
            for v in writes:
                place(v, pos, pinned, reload=False)
            ops = tuple(
                st.reg_of[o.id] if isinstance(o, V)
                else label_of(o) if isinstance(o, str) else o
                for o in it.operands
            )
            stored = it.operands[1] if it.mnemonic == "std" else None
            if not (isinstance(stored, V) and st.clean.get(stored.id) == it.operands[0]):
                written = instr_effects(it.mnemonic, ops)[1]
                moved = {p for p, (lo, hi) in _PTRS.items()
                         if (lo in written or hi in written) and p not in suspended}
                if moved:
                    rescue(moved, pos, pinned)
                    ops = tuple(st.reg_of[o.id] if isinstance(o, V) else q
                                for o, q in zip(it.operands, ops))
                if it.signed:
                    arm_signed[len(out.items)] = it.alt and (it.alt[0], tuple(
                        st.reg_of[o.id] if isinstance(o, V) else o for o in it.alt[1]))
                out.emit(it.mnemonic, *ops, comment=it.comment)
                if moved:  # a moved pointer voids memory copies and slots reached through it
                    for vid, mem in list(st.clean.items()):
                        if mem.ptr in moved:
                            del st.clean[vid]
                    for m in list(slot_free_until):
                        if m.ptr in moved and m not in slots_in_use:
                            del slot_free_until[m]
        for v in writes:
            st.clean.pop(v.id, None)
            free_slot(v.id)
            fresh.pop(v.id, None)
        if it.mnemonic in ("ldd", "std"):
            mem = it.operands[1] if it.mnemonic == "ldd" else it.operands[0]
            v = it.operands[0] if it.mnemonic == "ldd" else it.operands[1]
            if isinstance(v, V):
                st.clean[v.id] = mem
                if it.mnemonic == "ldd":  # just emitted: the last item of out
                    note_load(v)
        if it.mnemonic == "std":  # the store overwrites whatever memory copy was there
            slots_in_use.pop(it.operands[0], None)
            stored = it.operands[1]
            for vid, mem in list(st.clean.items()):
                if mem == it.operands[0] and not (isinstance(stored, V) and vid == stored.id):
                    del st.clean[vid]
        for v in dict.fromkeys([*reads, *writes]):
            if v.id in st.reg_of and last_use(v.id) <= pos and v.id not in live_out_ids:
                release(st.reg_of[v.id])
                st.clean.pop(v.id, None)
                free_slot(v.id)  # a dead value frees its spill slot
    return {v.id: st.reg_of[v.id] for v in live_out if v.id in st.reg_of}


def _emit_signed_arm(out: Program, start: int, signed: dict[int, tuple | None],
                     labels: Program) -> None:
    """Turn out.items[start:] (the adding arm) into: a jump to it if T is set; its subtracting
    copy (signed: position -> alt, see VInstr); RJMP past it; the arm.  Both paths take the same
    cycles (NOPs balance them).  An arm beyond BRTS's reach is entered by BRTC over an RJMP
    instead."""
    arm = out.items[start:]
    if any(isinstance(item, Label) for item in arm):
        raise AllocationError("a signed arm cannot contain labels")
    del out.items[start:]
    sub_path, add_path, join = (labels.new_label(h) for h in ("subM", "addM", "join"))
    near = sum(i.size for i in arm if isinstance(i, Instr)) // 2 + 1 <= 63  # BRTS's reach, words
    if near:
        out.brts(add_path, comment="T set: add")
    else:
        out.brtc(sub_path, comment="T clear: subtract")
        out.rjmp(add_path)
        out.label(sub_path)

    def copy(subtracting: bool) -> list:
        items = []
        for k, item in enumerate(arm, start):
            if isinstance(item, Instr) and subtracting and k in signed:
                alt = signed[k]
                if alt is None:
                    items.append(Instr.make(_SUBTRACTING[item.mnemonic], *item.operands,
                                            comment=item.comment))
                elif alt:
                    items.append(Instr.make(alt[0], *alt[1], comment=item.comment))
            else:
                items.append(item)
        return items

    def cycles(items: list) -> int:
        return sum(i.cycles() or 1 for i in items if isinstance(i, Instr))

    sub, add = copy(subtracting=True), copy(subtracting=False)
    # Entry: BRTS falls through (1) to the subtracting copy or jumps (2) to the adding one; BRTC
    # jumps (2) to the subtracting copy or falls through (1) to an RJMP (2) to the adding one.
    lag = (cycles(sub) + (3 if near else 4)) - (cycles(add) + (2 if near else 3))
    balance = Instr.make("nop", comment="balance: both paths take the same cycles")
    out.items.extend(sub + [balance] * max(0, -lag))
    out.rjmp(join)
    out.label(add_path)
    out.items.extend(add + [balance] * max(0, lag))
    out.label(join)


def _emit_copy_pair(it, st, free, out, pos, pinned, place, last_use, defragment: bool,
                    back_at: Callable[[int], int]) -> bool:
    """d1:d0 = s1:s0 by one MOVW where the registers allow, else two MOVs (returns False).
    A pushed pointer's pair (back_at: register -> where it comes back) is taken last for
    values that outlive that point."""
    d0, d1, s0, s1 = it.operands
    src = [st.reg_of[s.id] if isinstance(s, V) else s for s in (s0, s1)]
    pair = None
    aligned_src = src[0] % 2 == 0 and src[1] == src[0] + 1
    if d0.id not in st.reg_of and d1.id not in st.reg_of:
        death = max(last_use(d0.id), last_use(d1.id))
        pairs = [r for r in sorted(free) if r % 2 == 0 and r + 1 in free]
        pair = min(pairs, key=lambda r: death > back_at(r), default=None)
        if pair is None and aligned_src and defragment:
            pair = _defragment(st, free, out, pinned, {src[0], src[1]}, last_use)
    if pair is not None and aligned_src:
        free.remove(pair)
        free.remove(pair + 1)
        for v, r in ((d0, pair), (d1, pair + 1)):
            st.reg_of[v.id] = r
            st.holder[r] = v
        out.movw(pair, src[0], comment=it.comment)
        return True
    r0 = place(d0, pos, pinned, reload=False)
    r1 = place(d1, pos, pinned, reload=False)
    if r1 == r0 + 1 and r0 % 2 == 0 and aligned_src:
        out.movw(r0, src[0], comment=it.comment)
        return True
    out.mov(r0, src[0], comment=it.comment)
    out.mov(r1, src[1])
    return False


def _defragment(st, free, out, pinned, keep: set[int], last_use) -> int | None:
    """No aligned pair is free, but two single registers are: move one value out of a half-used
    pair into the other single (one MOV, as much as the MOV pair it replaces), leaving an aligned
    pair free for this MOVW and for the temporaries after it.  The value moved is the one that
    lives longest (the pair stays free the longest).  Returns the freed pair's even register, or
    None."""
    best = None
    for r in free:
        partner = r ^ 1
        v = st.holder.get(partner)
        if v is None or v.id in pinned or partner in keep:
            continue
        if best is None or last_use(v.id) > last_use(best[1].id):
            best = (partner, v)
    if best is None:
        return None
    partner, v = best
    dest = next((q for q in free if q != partner ^ 1), None)
    if dest is None:
        return None
    free.remove(dest)
    out.mov(dest, partner, comment=f"move {v.name}: free a register pair")
    del st.holder[partner]
    st.holder[dest] = v
    st.reg_of[v.id] = dest
    free.append(partner)
    return partner & ~1
