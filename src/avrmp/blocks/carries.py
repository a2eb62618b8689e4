"""The carries of carry chains that run in turns, parked in registers in between."""

from __future__ import annotations


class ParkedCarries:
    """Carry chains over byte strings that run in turns, a chunk of bytes at a time (a
    combination's chains, or two combinations' chains interleaved), their carries parked in
    registers between chunks.  A register holds one carry, in bit 0 or bit 7, its other bits
    zero, so one rotation through C changes chains: ROR takes a carry from bit 0 and parks the
    one in C in bit 7, ROL the reverse.  Parking in one register per chain and reviving from it
    (ROL, then LSR) costs two instructions per change instead.

    Chains are named.  enter(name) goes before each chunk of a chain; nothing between two chunks
    may change C (loads, stores, MOV, CLR and EOR do not), or park() must come first."""

    def __init__(self, p, zero) -> None:
        self.p, self.zero = p, zero
        self.at: dict[str, tuple[object, int]] = {}  # a parked carry: its register and bit
        self.in_c: str | None = None  # the chain whose carry C holds
        self.free: list = []  # registers that hold zero

    def seed(self, name: str, reg, bit: int = 0) -> None:
        """A chain whose first carry is parked already: in bit `bit` of reg, the rest zero."""
        self.at[name] = (reg, bit)

    def hold(self, name: str) -> None:
        """A chain whose first carry the code before has put in C already."""
        assert self.in_c is None
        self.in_c = name

    def enter(self, name: str, fresh: bool = False, low: bool = False) -> None:
        """Before a chunk of chain `name`: C = its carry, the carry C held parked (fresh: the
        chain's first chunk, which sets C itself; low: the carry C holds is joined next, where
        the order matters (see join), so it goes to bit 0 even if that costs a second
        instruction)."""
        if self.in_c == name:
            return
        out, p = self.in_c, self.p
        if fresh:
            assert name not in self.at
            self.park()
            self.in_c = name
            return
        reg, bit = self.at[name]
        if out is not None and low and bit == 0:  # a rotation would park it in bit 7
            self.park()
            out = None
        del self.at[name]
        if out is None:
            (p.lsr if bit == 0 else p.lsl)(reg, comment=f"C = {name}")
            self.free.append(reg)
        else:
            (p.ror if bit == 0 else p.rol)(reg, comment=f"C = {name}, {out} parked")
            self.at[out] = (reg, 7 - bit)
        self.in_c = name

    def park(self) -> None:
        """Park the carry C holds (before code that changes C) in bit 0 of a zero register."""
        if self.in_c is None:
            return
        reg = self.free.pop() if self.free else self._cleared()
        self.p.rol(reg, comment=f"park {self.in_c}")
        self.at[self.in_c], self.in_c = (reg, 0), None

    def _cleared(self):
        reg = self.p.v("cy")
        self.p.clr(reg)
        return reg

    def join(self, name: str, emit=None, first: str | None = None):
        """A register holding chain `name`'s last carry and the one in C (whose chain ends too)
        added by emit("adc"/"add", ...), which in a signed arm's subtracting copy subtracts the
        second from the first: first names the chain whose carry comes first (None: either)."""
        emit = emit or self.p.emit
        reg, bit = self.at.pop(name)
        in_reg, in_c = name, self.in_c
        if bit == 7:  # swap: reg = C's carry, in bit 0, and C = name's
            self.p.rol(reg, comment=f"swap {name} and {in_c}")
            in_reg, in_c = in_c, name
        self.in_c = None
        if first in (None, in_reg):
            emit("adc", reg, self.zero, comment=f"+ {in_c}")
            return reg
        self.in_c = in_c  # C's carry comes first: it needs a register of its own
        self.park()
        head, _ = self.at.pop(in_c)
        emit("add", head, reg)
        return head

    def absorb(self, reg, emit=None) -> None:
        """reg += the carry in C (whose chain ends), by emit("adc", reg, zero)."""
        (emit or self.p.emit)("adc", reg, self.zero, comment=f"+ {self.in_c}, still in C")
        self.in_c = None

    def add_to(self, acc, name: str, op: str = "add", emit=None) -> None:
        """acc += (op "sub": -=) chain `name`'s last carry: from bit 0 by one ADD (SUB) of its
        register while C holds no carry, else by one ADC (SBC) of zero once C holds it (one
        rotation brings it there and parks C's): a carry in C or bit 7 costs one instruction
        fewer than take() and an addition.  emit: as in join."""
        emit = emit or self.p.emit
        if self.in_c != name:
            reg, bit = self.at[name]
            if bit == 0 and self.in_c is None:  # (an addition would lose a carry in C)
                del self.at[name]
                emit(op, acc, reg)
                return
            self.enter(name)
        emit({"add": "adc", "sub": "sbc"}[op], acc, self.zero, comment=f"+ {name}, in C")
        self.in_c = None

    def add_all(self, terms) -> None:
        """add_to for each term (its arguments: acc, name[, op[, emit]]), cheapest first: the
        carry C holds, then one in bit 0 while C holds none (one ADD), then one in bit 7 (one
        rotation that parks C's carry in bit 0, where one ADD takes it later) before one in
        bit 0."""
        def cost(term) -> int:
            name = term[1]
            if name == self.in_c:
                return 0
            bit = self.at[name][1]
            return 1 if self.in_c is None and bit == 0 else 2 if bit == 7 else 3

        terms = list(terms)
        while terms:
            term = min(terms, key=cost)
            terms.remove(term)
            self.add_to(*term)

    def take(self, name: str):
        """A register holding chain `name`'s last carry in bit 0, the rest zero (C may change
        only if it holds no carry)."""
        if self.in_c == name:
            self.park()
        reg, bit = self.at.pop(name)
        if bit == 7:
            if self.in_c is None:
                self.p.lsl(reg)
                self.p.rol(reg)
            else:  # swap it with the carry in C, then park it in a register of its own
                self.p.rol(reg, comment=f"swap {name} and {self.in_c}")
                self.at[self.in_c], self.in_c = (reg, 0), name
                self.park()
                reg, _ = self.at.pop(name)
        return reg
