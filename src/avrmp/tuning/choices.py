"""The choices a generator makes while it builds a routine: searched once, recorded, replayed.

A build passes a Choices object down to every point where it picks among options (how many
Karatsuba levels, which form of a base block, which pointer layout...).  Searching, each such
point tries its options, keeps the cheapest by the cost model and records the winner together
with the decisions made while building it (a tree).  Replaying, each point takes the recorded
option and builds only that.  A routine is always emitted by a replay: a search is followed by
the replay of what it found, so the two give the same text, and the recorded tree (in the .S
header, or in the committed table of tuned choices) rebuilds the routine without searching.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..errors import AvrmpError
from ..regalloc.vprogram import AllocationError


class StaleChoices(AvrmpError):
    """Recorded choices that do not fit the generator (recorded by another version); `detail`
    says where they stop fitting."""

    @property
    def detail(self) -> str:
        return str(self.args[0])

    def __str__(self) -> str:
        return (f"recorded choices do not fit this generator: {self.detail}: regenerate "
                "without them (avrmp gen --tune)")


# What replaying a hand-edited or corrupted record can raise besides StaleChoices: the builders
# trust recorded values as they trust their own search's.
BROKEN_RECORD_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError,
                        ArithmeticError, AssertionError)


@dataclass
class Decision:
    """One choice: its name, the option taken (a JSON value) and the decisions made while
    building that option."""

    name: str
    value: object
    inner: list[Decision] = field(default_factory=list)

    def to_json(self) -> list:
        return [self.name, self.value, [d.to_json() for d in self.inner]]

    @staticmethod
    def from_json(data: list) -> Decision:
        name, value, inner = data
        return Decision(name, value, [Decision.from_json(d) for d in inner])


@dataclass
class Trial:
    """One option built while searching: its result, its cost, the decisions it made."""

    value: object
    result: object
    cost: object
    made: list[Decision]


class Choices:
    """The decisions of one build, in the order the build makes them; searching (record None)
    or replaying a record.  core: the timing the search's cost model uses.  jitter (searching):
    how many jittered allocations a block's search tries beside its plain ones (see
    karatsuba/search.py)."""

    def __init__(self, record: Iterable[Decision] | None = None, core: str = "avre",
                 jitter: int = 0) -> None:
        self.pending = None if record is None else list(record)
        self.jitter = jitter
        self.made: list[Decision] = []
        self.core = core

    @property
    def searching(self) -> bool:
        return self.pending is None

    def fresh(self) -> Choices:
        """A searching Choices with the same cost model."""
        return Choices(None, self.core, self.jitter)

    def cycles(self, program) -> int:
        """The search's cost of a program: its cycles on the path without branches taken (a
        NOP-balanced branch costs the same either way), on this core."""
        return program.static_cycles(self.core, nominal=True)

    # --- replaying ------------------------------------------------------------------------

    def take(self, name: str, options: Iterable | None = None) -> Decision:
        """The next recorded decision, which must be `name` (and its value one of `options`,
        the values a search would have tried, when given)."""
        if not self.pending or self.pending[0].name != name:
            found = self.pending[0].name if self.pending else "nothing"
            raise StaleChoices(f"expected {name}, found {found}")
        if options is not None:
            require_option(name, self.pending[0].value, options)
        return self.pending.pop(0)

    def finish(self) -> None:
        """Replaying: every recorded decision was used."""
        if self.pending:
            raise StaleChoices(f"{self.pending[0].name} was never asked for")

    def replay(self, name: str, build: Callable[[object, Choices], object],
               options: Iterable | None = None):
        """Replaying: build the recorded option of `name` (and record it again); options: the
        values a search would have tried, which the recorded one must be among."""
        d = self.take(name, options)
        sub = Choices(d.inner, self.core)
        result = build(d.value, sub)
        sub.finish()
        self.made.append(Decision(name, d.value, sub.made))
        return result

    # --- searching ------------------------------------------------------------------------

    def trial(self, value, build: Callable[[object, Choices], object],
              cost: Callable[[object], object]) -> Trial | None:
        """Searching: one option built with fresh choices, or None if it does not allocate."""
        sub = self.fresh()
        try:
            result = build(value, sub)
        except AllocationError:
            return None
        return Trial(value, result, cost(result), sub.made)

    def record(self, name: str, trial: Trial) -> None:
        self.made.append(Decision(name, trial.value, trial.made))

    def adopt(self, made: list[Decision]) -> None:
        """Searching: decisions made elsewhere (a cached build's) become this build's."""
        self.made.extend(made)

    def cheapest(self, name: str, options: Iterable, build: Callable[[object, Choices], object],
                 cost: Callable[[object], object]) -> Trial:
        """Searching: the option whose build costs least, the first among equals."""
        best = None
        for value in options:
            trial = self.trial(value, build, cost)
            if trial is not None and (best is None or trial.cost < best.cost):
                best = trial
        if best is None:
            raise AllocationError(f"no option for {name} fits the registers and memory")
        return best

    def choose(self, name: str, options: Iterable, build: Callable[[object, Choices], object],
               cost: Callable[[object], object]):
        """The cheapest of the options by cost(build(option, choices)) (searching), or the
        recorded one (replaying); returns its build."""
        if not self.searching:
            return self.replay(name, build, options)
        best = self.cheapest(name, options, build, cost)
        self.record(name, best)
        return best.result

    def choose_by(self, name: str, options: Iterable, probe: Callable[[object, Choices], object],
                  cost: Callable[[object], object], build: Callable[[object, Choices], object]):
        """Like choose, but the options are compared by another build (probe: a branch-free or
        stand-alone version of what build makes); build(option) is what is recorded and
        returned."""
        if not self.searching:
            return self.replay(name, build, options)
        value = self.cheapest(name, options, probe, cost).value
        final = self.trial(value, build, cost=lambda _: 0)
        if final is None:
            raise AllocationError(f"the option chosen for {name} does not fit")
        self.record(name, final)
        return final.result

    def decide(self, name: str, search: Callable[[], object], options: Iterable | None = None):
        """A decision with no choices inside it: the recorded value (which must be among
        options, when given), or search()'s."""
        value = search() if self.searching else self.take(name, options).value
        self.made.append(Decision(name, value))
        return value

    def decide_late(self, name: str, search: Callable[[], object]):
        """A decision the generator added after records were made: replaying a record that
        lacks it, search() supplies it (and it is recorded from then on)."""
        if self.searching or (self.pending and self.pending[0].name == name):
            return self.decide(name, search)
        value = search()
        self.made.append(Decision(name, value))
        return value


def require_option(name: str, value, options: Iterable) -> None:
    """StaleChoices unless the recorded value of `name` is one of the options (compared as
    JSON: a record holds lists where the generator may offer tuples)."""
    offered = {json.dumps(o, sort_keys=True) for o in options}
    if json.dumps(value, sort_keys=True) not in offered:
        raise StaleChoices(f"{name} {json.dumps(value)} is not one of its options")


def memo_search(build: Callable):
    """A builder build(*args, choices) whose searches are kept (by its arguments and the cost
    model's core) and shared: a second search for the same arguments adopts the first one's
    decisions and result (treat it as read-only).  A replay always builds."""
    kept: dict = {}

    def wrapper(*args, choices: Choices):
        if not choices.searching:
            return build(*args, choices=choices)
        key = (*args, choices.core)
        if key not in kept:
            sub = choices.fresh()
            kept[key] = (build(*args, choices=sub), sub.made)
        result, made = kept[key]
        choices.adopt(made)
        return result

    wrapper.__doc__ = build.__doc__
    wrapper.__name__ = build.__name__
    return wrapper


# --- text -------------------------------------------------------------------------------------

CHOICES_HEAD = "; choices (avrmp rebuild FILE.S makes this routine again from them):"


def render(decisions: list[Decision], depth: int = 0) -> list[str]:
    """The decisions as .S comment lines, one a line, indented by depth."""
    out = []
    for d in decisions:
        value = json.dumps(d.value, sort_keys=True, separators=(", ", ": "))
        out.append(f";   {'  ' * depth}{d.name}: {value}")
        out += render(d.inner, depth + 1)
    return out


def parse(lines: Iterable[str]) -> list[Decision] | None:
    """The decisions written by render() after CHOICES_HEAD in a .S file's lines (None if it has
    no such section)."""
    lines = iter(lines)
    if not any(line.strip() == CHOICES_HEAD for line in lines):
        return None
    root: list[Decision] = []
    stack: list[tuple[int, list[Decision]]] = [(-1, root)]
    for line in lines:
        if not line.startswith(";   "):
            break
        body = line[4:]
        depth = (len(body) - len(body.lstrip(" "))) // 2
        name, _, value = body.strip().partition(": ")
        while stack[-1][0] >= depth:
            stack.pop()
        d = Decision(name, json.loads(value))
        stack[-1][1].append(d)
        stack.append((depth, d.inner))
    return root
