"""Virtual registers to AVR registers.

The allocator walks the straight-line code once and assigns physical registers with Belady's
rule (evict the value needed farthest in the future).  An evicted value that is still in memory
(an operand loaded with LDD, a result already stored with STD) is simply reloaded later; any other
value is spilled with STD to a scratch slot the kernel lends (part of the result buffer not yet
written), and reloaded with LDD.  Loads and stores do not touch the flags, so inserted spill code
never breaks a carry chain.  The only control flow is the signed arm (VProgram.arm_begin):
allocated once, emitted as an adding and a subtracting copy.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..program.items import Comment, Label
from ..program.program import Program
from ..target.avr.isa import OPS, POINTER_REGS, Instr, Mem, instr_effects, op
from .signed_arm import emit_signed_arm
from .vprogram import (
    AllocationError,
    Claim,
    Lend,
    Release,
    SignedArm,
    V,
    VInstr,
    VProgram,
    virtual_effects,
)

NEVER = 10**9  # the next use of a value no instruction reads again
JITTER = 60  # a jittered allocation's noise, in instructions of next use (see Allocator)


def allocate(vp: VProgram, pool: Sequence[int], out: Program, spill_slots: Iterable[Mem] = (),
             live_out: Iterable[V] = (), labels_from: Program | None = None,
             defragment: bool = False, stats: dict | None = None,
             clean_bias: int = 0, jitter: int = 0) -> dict[int, int]:
    """Emit `vp` into `out` with physical registers from `pool` (see Allocator); returns V.id ->
    register for the values in `live_out` (kept in registers at the end)."""
    return Allocator(vp, pool, out, spill_slots, live_out, labels_from, defragment, stats,
                     clean_bias, jitter).run()


@dataclass
class Placement:
    reg_of: dict[int, int] = field(default_factory=dict)  # V.id -> physical register
    holder: dict[int, V] = field(default_factory=dict)  # physical register -> V
    clean: dict[int, Mem] = field(default_factory=dict)  # V.id -> memory holding its value


class Plan:
    """What the allocator knows of the code before it starts: each instruction's virtual
    registers, every value's uses, the kernel's own stores into lent memory, the values that
    CLR recreates and those that must live in r16..r31."""

    def __init__(self, items: list, live_out: set[int]) -> None:
        self.items, self.end = items, len(items)
        self.effects = [virtual_effects(it) if isinstance(it, VInstr) else ([], [])
                        for it in items]
        self.uses: dict[int, list[int]] = {}
        for pos, (reads, _) in enumerate(self.effects):
            for v in reads:
                self.uses.setdefault(v.id, []).append(pos)
        for vid in live_out:
            self.uses.setdefault(vid, []).append(self.end)
        # Where the kernel's own stores overwrite a scratch slot: a spill there must be dead by
        # then.
        self.stores: dict[Mem, list[int]] = {}
        # A value headed for a lent slot (its final store) can be spilled straight there; that
        # final store then becomes redundant and is left out.
        self.final_store: dict[int, tuple[int, Mem]] = {}
        for pos, it in enumerate(items):
            if isinstance(it, VInstr) and it.mnemonic == "std":
                self.stores.setdefault(it.operands[0], []).append(pos)
                if isinstance(it.operands[1], V):
                    self.final_store[it.operands[1].id] = (pos, it.operands[0])
        # A register cleared once and then only read (a zero register) is never spilled:
        # evicting it is free and CLR brings it back (CLR leaves C alone, and no block tests Z
        # across it).
        writers: dict[int, list[str]] = {}
        for pos, (_, writes) in enumerate(self.effects):
            for v in writes:
                writers.setdefault(v.id, []).append(items[pos].mnemonic)
        self.remat = {vid for vid, ms in writers.items() if ms == ["clr"]}
        # Values some instruction needs in r16..r31 (SUBI, ANDI, ...) live there all along.
        self.high = {o.id for it in items if isinstance(it, VInstr) and it.mnemonic in OPS
                     for kind, o in zip(op(it.mnemonic).kinds, it.operands)
                     if kind == "h" and isinstance(o, V)}
        self.by_id = {v.id: v for reads, writes in self.effects for v in (*reads, *writes)}
        self.cursor = {vid: 0 for vid in self.uses}

    def first_store(self, mem: Mem, after: int) -> int:
        at = self.stores.get(mem, [])
        i = bisect.bisect_left(at, after)
        return at[i] if i < len(at) else self.end + 1

    def next_use(self, vid: int, pos: int) -> int:
        lst = self.uses.get(vid, [])
        i = self.cursor.get(vid, 0)
        while i < len(lst) and lst[i] < pos:
            i += 1
        self.cursor[vid] = i
        return lst[i] if i < len(lst) else NEVER

    def last_use(self, vid: int) -> int:
        lst = self.uses.get(vid, [])
        return lst[-1] if lst else -1


class Allocator:
    """One allocation of a VProgram.  Labels are made unique through `labels_from` (default:
    `out`).  defragment: when a MOVW target finds no free aligned pair, move a value out of a
    half-used pair first (see defragment).  stats, if given, counts the pair copies that had to
    be split into two MOVs ("split_pairs").  clean_bias: evicting a value whose memory copy is
    valid costs a reload only, one that must be spilled a store too; an eviction candidate counts
    as needed this many instructions later if it is clean.  jitter (a seed, 0: none): the
    eviction and register choices are perturbed by a pseudo-random draw from that seed, so that
    a search can try other allocations of the same code (the seed is recorded: replaying it
    allocates the same way)."""

    def __init__(self, vp: VProgram, pool: Sequence[int], out: Program,
                 spill_slots: Iterable[Mem], live_out: Iterable[V], labels_from: Program | None,
                 defragment: bool, stats: dict | None, clean_bias: int, jitter: int = 0) -> None:
        self.rng = random.Random(jitter) if jitter else None
        self.live_out = list(live_out)
        self.live_out_ids = {v.id for v in self.live_out}
        self.plan = Plan(vp.items, self.live_out_ids)
        self.out, self.labels = out, labels_from or out
        self.defragment, self.stats, self.clean_bias = defragment, stats, clean_bias
        self.spill_slots = list(spill_slots)
        self.slot_free_until = {m: self.plan.first_store(m, 0) for m in self.spill_slots}
        self.slots_in_use: dict[Mem, int] = {}  # slot -> V.id spilled there
        self.st = Placement()
        self.free = list(pool)
        self.suspended: dict[str, int] = {}  # pointer pushed or lent until its Claim's position
        self.back: dict[int, int] = {}  # register lent until its Claim's position
        # Definitions that are redone where the value is used after an eviction (an LDD, or the
        # CLR of a zero) whose value has not been read since: evicting such a value drops its
        # definition, for the reload or the CLR where it is used does the work (drop_unread).
        self.fresh: dict[int, int] = {}
        self.arm_start: int | None = None  # where the current signed arm's code begins in out
        self.arm_signed: dict[int, tuple | None] = {}  # its signed instructions -> their alt
        self.local_labels: dict[str, str] = {}  # block-local label -> unique label in out

    # --- the walk ---------------------------------------------------------------------------

    def run(self) -> dict[int, int]:
        handlers = {Label: self.on_label, Comment: self.on_comment, Release: self.on_release,
                    Claim: self.on_claim, Lend: self.on_lend, SignedArm: self.on_arm,
                    VInstr: self.on_instr}
        for pos, it in enumerate(self.plan.items):
            handlers[type(it)](pos, it)
        return {v.id: self.st.reg_of[v.id] for v in self.live_out if v.id in self.st.reg_of}

    def on_label(self, pos: int, it: Label) -> None:
        self.out.label(self.label_of(it.name))

    def on_comment(self, pos: int, it: Comment) -> None:
        self.out.items.append(it)

    def on_lend(self, pos: int, it: Lend) -> None:
        for m in it.slots:
            self.slot_free_until[m] = self.plan.first_store(m, pos)

    def on_arm(self, pos: int, it: SignedArm) -> None:
        if it.begin:
            self.arm_start, self.arm_signed = len(self.out.items), {}
        else:
            emit_signed_arm(self.out, self.arm_start, self.arm_signed, self.labels)
            self.arm_start = None

    def on_release(self, pos: int, it: Release) -> None:
        st, regs = self.st, set(it.regs)
        if it.until_claim:
            self.suspend(pos, it)
        if not it.pushed:
            self.rescue({p for p, pair in POINTER_REGS.items() if set(pair) & regs}, pos, set())
            for m in list(self.slot_free_until):  # memory reached through that pointer is gone
                if set(POINTER_REGS[m.ptr]) & regs and m not in self.slots_in_use:
                    del self.slot_free_until[m]
            for vid, mem in list(st.clean.items()):
                if set(POINTER_REGS[mem.ptr]) & regs:
                    del st.clean[vid]
        self.free.extend(r for r in it.regs if r not in self.free and r not in st.holder)

    def suspend(self, pos: int, it: Release) -> None:
        """A pointer pushed or lent: its registers join the pool until its Claim (a lent
        pointer never claimed: to the end); if pushed, values that need its memory before then
        come back into registers now."""
        items = self.plan.items
        ptrs = {p for p, pair in POINTER_REGS.items() if set(pair) <= set(it.regs)}
        claim = next((q for q in range(pos, self.plan.end) if isinstance(items[q], Claim)
                      and set(items[q].regs) == set(it.regs)), self.plan.end)
        for ptr in ptrs:
            self.suspended[ptr] = claim
        for r in it.regs:
            self.back[r] = claim
        if not it.pushed:
            return
        for vid, mem in list(self.st.clean.items()):  # needed before the claim: back in now
            if mem.ptr in ptrs and vid not in self.st.reg_of \
                    and self.plan.next_use(vid, pos) < claim:
                self.place(self.plan.by_id[vid], pos, {vid}, reload=True)
        for m in list(self.slot_free_until):  # slots in use keep their values (slots_in_use)
            if m.ptr in ptrs:
                del self.slot_free_until[m]

    def on_claim(self, pos: int, it: Claim) -> None:
        """The pointer comes back: values in its registers move out, and it is popped if it was
        pushed (Claim.popped)."""
        st, out = self.st, self.out
        for r in it.regs:
            if r in self.free:
                self.free.remove(r)
        lo = it.regs[0]
        pair = self.free_pair()
        if len(it.regs) == 2 and pair is not None and all(r in st.holder for r in it.regs):
            for r, to in ((lo, pair), (lo + 1, pair + 1)):  # both held: one MOVW
                v = st.holder.pop(r)
                self.free.remove(to)
                st.reg_of[v.id], st.holder[to] = to, v
            out.movw(pair, lo, comment="move both out: the pointer comes back")
        for r in it.regs:
            v = st.holder.get(r)
            if v is not None:
                self.release(r)
                self.free.remove(r)
                to = self.place(v, pos, {v.id}, reload=False)
                out.mov(to, r, comment=f"move {v.name}: the pointer comes back")
        for r in reversed(it.regs) if it.popped else ():
            out.pop(r)
        for ptr in [q for q, pair in POINTER_REGS.items() if set(pair) <= set(it.regs)]:
            self.suspended.pop(ptr, None)
        for r in it.regs:
            self.back.pop(r, None)
        for m in self.spill_slots:  # lent through the restored pointer: room again
            after = self.plan.first_store(m, pos)
            if set(POINTER_REGS[m.ptr]) <= set(it.regs) and after > pos:
                self.slot_free_until[m] = after

    def on_instr(self, pos: int, it: VInstr) -> None:
        reads, writes = self.plan.effects[pos]
        pinned = {v.id for v in reads} | {v.id for v in writes}
        if it.mnemonic in OPS and Instr(it.mnemonic).is_branch:
            raise AllocationError("a branch in virtual-register code: use a signed arm")
        for v in reads:
            self.place(v, pos, pinned, reload=True)
            self.fresh.pop(v.id, None)
        if it.mnemonic == "copy_pair":
            if not self.copy_pair(it, pos, pinned) and self.stats is not None:
                self.stats["split_pairs"] = self.stats.get("split_pairs", 0) + 1
        elif it.mnemonic == "clr_pair":
            self.clr_pair(it, pos, pinned)
        elif it.mnemonic == "pair_out":
            self.pair_out(it, pos)
        else:
            for v in writes:
                self.place(v, pos, pinned, reload=False)
            self.emit(it, pos, pinned)
        self.after(it, pos, reads, writes)

    def emit(self, it: VInstr, pos: int, pinned: set[int]) -> None:
        """The instruction with its registers; a store of a value to where its memory copy
        already is, is left out."""
        st = self.st
        stored = it.operands[1] if it.mnemonic == "std" else None
        if isinstance(stored, V) and st.clean.get(stored.id) == it.operands[0]:
            return
        ops = self.physical(it.operands)
        written = instr_effects(it.mnemonic, ops)[1]
        moved = {p for p, (lo, hi) in POINTER_REGS.items()
                 if (lo in written or hi in written) and p not in self.suspended}
        if moved:
            self.rescue(moved, pos, pinned)
            ops = self.physical(it.operands)
        if it.signed:
            self.arm_signed[len(self.out.items)] = it.alt and (
                it.alt[0], tuple(st.reg_of[o.id] if isinstance(o, V) else o for o in it.alt[1]))
        self.out.emit(it.mnemonic, *ops, comment=it.comment)
        if moved:  # a moved pointer voids memory copies and slots reached through it
            for vid, mem in list(st.clean.items()):
                if mem.ptr in moved:
                    del st.clean[vid]
            for m in list(self.slot_free_until):
                if m.ptr in moved and m not in self.slots_in_use:
                    del self.slot_free_until[m]

    def physical(self, operands: tuple) -> tuple:
        return tuple(self.st.reg_of[o.id] if isinstance(o, V)
                     else self.label_of(o) if isinstance(o, str) else o for o in operands)

    def after(self, it: VInstr, pos: int, reads: list[V], writes: list[V]) -> None:
        """Bookkeeping once the instruction is out: memory copies, slots, dead values."""
        st = self.st
        for v in writes:
            st.clean.pop(v.id, None)
            self.free_slot(v.id)
            self.fresh.pop(v.id, None)
        if it.mnemonic in ("ldd", "std"):
            mem = it.operands[1] if it.mnemonic == "ldd" else it.operands[0]
            v = it.operands[0] if it.mnemonic == "ldd" else it.operands[1]
            if isinstance(v, V):
                st.clean[v.id] = mem
                if it.mnemonic == "ldd":  # just emitted: the last item of out
                    self.note_fresh(v)
        if it.mnemonic == "clr" and writes and writes[0].id in self.plan.remat:
            self.note_fresh(writes[0])
        if it.mnemonic == "std":  # the store overwrites whatever memory copy was there
            self.slots_in_use.pop(it.operands[0], None)
            stored = it.operands[1]
            for vid, mem in list(st.clean.items()):
                if mem == it.operands[0] and not (isinstance(stored, V) and vid == stored.id):
                    del st.clean[vid]
        if it.mnemonic in ("clr", "ldd") and writes and self.arm_start is None \
                and self.plan.last_use(writes[0].id) <= pos \
                and writes[0].id not in self.live_out_ids:  # a definition nothing reads: gone
            self.out.items[-1] = Comment(f"{writes[0].name} is never read")
            self.fresh.pop(writes[0].id, None)
        for v in dict.fromkeys([*reads, *writes]):
            if v.id in st.reg_of and self.plan.last_use(v.id) <= pos \
                    and v.id not in self.live_out_ids:
                self.release(st.reg_of[v.id])
                st.clean.pop(v.id, None)
                self.free_slot(v.id)  # a dead value frees its spill slot

    # --- registers --------------------------------------------------------------------------

    def back_at(self, reg: int) -> int:
        """Where a pushed or lent register is claimed back (NEVER: it is not)."""
        return self.back.get(reg, NEVER)

    def free_pair(self) -> int | None:
        """An aligned pair of free registers that no pushed pointer will claim back."""
        pairs = [r for r in sorted(self.free) if r % 2 == 0 and r + 1 in self.free
                 and self.back_at(r) == NEVER]
        if self.rng and pairs:
            return self.rng.choice(pairs)
        return pairs[0] if pairs else None

    def release(self, reg: int) -> None:
        v = self.st.holder.pop(reg)
        del self.st.reg_of[v.id]
        self.free.append(reg)

    def place(self, v: V, pos: int, pinned: set[int], reload: bool) -> int:
        """v's register, taking one (and reloading or recreating v there) if it has none."""
        st, plan = self.st, self.plan
        reg = st.reg_of.get(v.id)
        if reg is not None:
            return reg
        reg = self.take(pos, pinned, want_h=v.id in plan.high, death=plan.last_use(v.id))
        if reload:
            mem = st.clean.get(v.id)
            if v.id in plan.remat:
                self.out.clr(reg, comment=f"recreate {v.name}")
                self.note_fresh(v)
            elif mem is None:
                raise AllocationError(f"{v} read before it was defined")
            else:
                self.out.ldd(reg, mem, comment=f"reload {v.name}")
                self.note_fresh(v)
        st.reg_of[v.id] = reg
        st.holder[reg] = v
        return reg

    def take(self, pos: int, pinned: set[int], want_h: bool = False,
             death: int | None = None) -> int:
        """A free register (r16..r31 if want_h), or one made free by moving or evicting a
        value."""
        cands = [r for r in self.free if r >= 16] if want_h else self.free
        if want_h and not cands and self.free:
            moved = self.move_up_high(pos, pinned)
            if moved is not None:
                return moved
        if not cands:
            return self.evict(pos, pinned, want_h)
        reg = cands[0] if death is None else min(cands, key=lambda r: self.hole_score(r, death))
        self.free.remove(reg)
        return reg

    def hole_score(self, r: int, death: int) -> tuple:
        """Pair-friendly choice: fill a hole whose partner is freed about when this value dies,
        so aligned pairs (MOVW targets) come free whole; break a free pair last.  A pushed
        pointer's registers only for values dead before it comes back."""
        back = death > self.back_at(r)
        noise = self.rng.randrange(JITTER) if self.rng else 0
        if r ^ 1 in self.free:
            return (back, 1, noise)
        partner = self.st.holder.get(r ^ 1)  # None: outside the pool, never pairs
        return (back, 0, noise + (abs(self.plan.last_use(partner.id) - death) if partner else 0))

    def move_up_high(self, pos: int, pinned: set[int]) -> int | None:
        """Make room up high by one MOV rather than a spill: a value in r16..r31 that needs no
        high register moves down; returns the register it left (None if none can move)."""
        st = self.st
        movable = [r for r, v in st.holder.items()
                   if r >= 16 and v.id not in pinned and v.id not in self.plan.high]
        if not movable:
            return None
        reg = max(movable, key=lambda r: self.plan.next_use(st.holder[r].id, pos))
        v = st.holder.pop(reg)
        to = min(self.free, key=lambda r: (self.back_at(r) < self.plan.last_use(v.id), r))
        self.free.remove(to)
        self.out.mov(to, reg, comment=f"move {v.name}: its register is needed up high")
        st.reg_of[v.id], st.holder[to] = to, v
        return reg

    def evict(self, pos: int, pinned: set[int], want_h: bool) -> int:
        """Belady's choice, except that with no free spill slot a clean value must go first;
        the value leaves by a spill or, if its memory copy is valid, for free."""
        st, plan = self.st, self.plan
        victims = [(plan.next_use(v.id, pos), self.clean_at(v.id, pos), r)
                   for r, v in st.holder.items()
                   if v.id not in pinned and (not want_h or r >= 16)]
        if not victims:
            raise AllocationError("no register left to evict")
        spill_scarce = not any(m not in self.slots_in_use
                               for m, until in self.slot_free_until.items() if until > pos)
        bias = self.clean_bias
        if self.rng:
            victims = [(nu + self.rng.randrange(JITTER), clean, r) for nu, clean, r in victims]
        nu, _, reg = max(victims, key=lambda v: (v[1], v[0]) if spill_scarce
                         else (v[0] + (bias if v[1] else 0), v[1], v[2]))
        v = st.holder[reg]
        if nu < NEVER and not self.clean_at(v.id, pos):
            self.spill(v, reg, pos)
        else:
            self.drop_unread(v, reg)
        self.release(reg)
        self.free.remove(reg)
        return reg

    def spill(self, v: V, reg: int, pos: int) -> None:
        """STD v to a free slot: its final store's slot if still free, else any lent slot free
        until v's last use."""
        home_pos, home = self.plan.final_store.get(v.id, (-1, None))
        slot = None
        if (home in self.slot_free_until and home not in self.slots_in_use
                and self.slot_free_until[home] == home_pos > pos):
            slot = home
        last = self.plan.last_use(v.id)
        slot = slot or next((m for m, until in self.slot_free_until.items()
                             if m not in self.slots_in_use and until > last), None)
        if slot is None:
            raise AllocationError(f"no spill slot for {v} (kernel must lend more scratch)")
        self.out.std(slot, reg, comment=f"spill {v.name}")
        self.slots_in_use[slot] = v.id
        self.st.clean[v.id] = slot

    def clean_at(self, vid: int, pos: int) -> bool:
        """Whether evicting vid needs no store: its memory copy can be reloaded when needed."""
        if vid in self.plan.remat:
            return True
        mem = self.st.clean.get(vid)
        return mem is not None and (mem.ptr not in self.suspended
                                    or self.plan.next_use(vid, pos) > self.suspended[mem.ptr])

    def free_slot(self, vid: int) -> None:
        for m, holder in list(self.slots_in_use.items()):
            if holder == vid:
                del self.slots_in_use[m]

    def rescue(self, ptrs: set[str], pos: int, pinned: set[int]) -> None:
        """A pointer is about to change: values whose only copy is reached through it come back
        into registers first."""
        for vid, mem in list(self.st.clean.items()):
            if mem.ptr in ptrs and vid not in self.st.reg_of \
                    and self.plan.next_use(vid, pos) < NEVER:
                self.place(self.plan.by_id[vid], pos, pinned | {vid}, reload=True)

    def note_fresh(self, v: V) -> None:
        if self.arm_start is None:  # an arm's code is rebuilt at its end: indices do not last
            self.fresh[v.id] = len(self.out.items) - 1

    def drop_unread(self, v: V, reg: int) -> None:
        """v leaves reg unread since its load or CLR (see fresh): that goes, unless something
        the allocator emitted since (a MOV making room, say) reads reg.  (A CLR's flags are
        never read: C, the only flag read across instructions here, it leaves alone.)"""
        items = self.out.items
        idx = self.fresh.pop(v.id, None)
        if idx is None or items[idx].operands[0] != reg:
            return
        if any(reg in i.reads for i in items[idx + 1:] if isinstance(i, Instr)):
            return
        made = "cleared" if items[idx].mnemonic == "clr" else "loaded"
        items[idx] = Comment(f"{v.name} is {made} where it is used")

    def label_of(self, name: str) -> str:
        if name not in self.local_labels:
            self.local_labels[name] = self.labels.new_label(f"{name}_")
        return self.local_labels[name]

    # --- register pairs -----------------------------------------------------------------------

    def clr_pair(self, it: VInstr, pos: int, pinned: set[int]) -> None:
        d0, d1 = it.operands
        pair = self.free_pair()
        if pair is not None:
            for v, r in ((d0, pair), (d1, pair + 1)):
                self.free.remove(r)
                self.st.reg_of[v.id] = r
                self.st.holder[r] = v
        for v in (d0, d1):
            self.out.clr(self.place(v, pos, pinned, reload=False))

    def pair_out(self, it: VInstr, pos: int) -> None:
        """The fixed pair at lo = d1:d0 (VProgram.pair_out): nothing if they are there, one MOVW
        from an aligned pair, else a MOV for each one not in place, in an order that reads each
        source before it is overwritten (through r1:r0 when the two are swapped).  No other
        value may still be needed from the pair."""
        d0, d1, lo = it.operands
        for reg in (lo, lo + 1):
            v = self.st.holder.get(reg)
            if v is not None and v.id not in (d0.id, d1.id) and self.plan.last_use(v.id) > pos:
                raise AllocationError(f"pair_out to r{lo}: r{reg} still holds {v}, needed later")
        r0, r1 = self.st.reg_of[d0.id], self.st.reg_of[d1.id]
        out = self.out
        if (r0, r1) == (lo, lo + 1):
            return
        if r0 % 2 == 0 and r1 == r0 + 1:
            out.movw(lo, r0, comment=it.comment)
        elif r1 != lo:
            out.mov(lo, r0, comment=it.comment)
            if r1 != lo + 1:
                out.mov(lo + 1, r1)
        elif r0 != lo + 1:
            out.mov(lo + 1, r1, comment=it.comment)
            if r0 != lo:
                out.mov(lo, r0)
        else:
            out.movw(0, lo)
            out.mov(lo, 1, comment=it.comment)
            out.mov(lo + 1, 0)

    def copy_pair(self, it: VInstr, pos: int, pinned: set[int]) -> bool:
        """d1:d0 = s1:s0 by one MOVW where the registers allow, else two MOVs (returns False).
        A pushed pointer's pair is taken last for values that outlive its return."""
        st, out = self.st, self.out
        d0, d1, s0, s1 = it.operands
        src = [st.reg_of[s.id] if isinstance(s, V) else s for s in (s0, s1)]
        pair = None
        aligned_src = src[0] % 2 == 0 and src[1] == src[0] + 1
        if d0.id not in st.reg_of and d1.id not in st.reg_of:
            death = max(self.plan.last_use(d0.id), self.plan.last_use(d1.id))
            pairs = [r for r in sorted(self.free) if r % 2 == 0 and r + 1 in self.free]
            pair = min(pairs, key=lambda r: death > self.back_at(r), default=None)
            if pair is None and aligned_src and self.defragment:
                pair = self.free_a_pair(pinned, {src[0], src[1]})
        if pair is not None and aligned_src:
            self.free.remove(pair)
            self.free.remove(pair + 1)
            for v, r in ((d0, pair), (d1, pair + 1)):
                st.reg_of[v.id] = r
                st.holder[r] = v
            out.movw(pair, src[0], comment=it.comment)
            return True
        r0 = self.place(d0, pos, pinned, reload=False)
        r1 = self.place(d1, pos, pinned, reload=False)
        if r1 == r0 + 1 and r0 % 2 == 0 and aligned_src:
            out.movw(r0, src[0], comment=it.comment)
            return True
        out.mov(r0, src[0], comment=it.comment)
        out.mov(r1, src[1])
        return False

    def free_a_pair(self, pinned: set[int], keep: set[int]) -> int | None:
        """No aligned pair is free, but two single registers are: move one value out of a
        half-used pair into the other single (one MOV, as much as the MOV pair it replaces),
        leaving an aligned pair free for this MOVW and for the temporaries after it.  The value
        moved is the one that lives longest (the pair stays free the longest).  Returns the freed
        pair's even register, or None."""
        st, last_use = self.st, self.plan.last_use
        best = None
        for r in self.free:
            partner = r ^ 1
            v = st.holder.get(partner)
            if v is None or v.id in pinned or partner in keep:
                continue
            if best is None or last_use(v.id) > last_use(best[1].id):
                best = (partner, v)
        if best is None:
            return None
        partner, v = best
        dest = next((q for q in self.free if q != partner ^ 1), None)
        if dest is None:
            return None
        self.free.remove(dest)
        self.out.mov(dest, partner, comment=f"move {v.name}: free a register pair")
        del st.holder[partner]
        st.holder[dest] = v
        st.reg_of[v.id] = dest
        self.free.append(partner)
        return partner & ~1
