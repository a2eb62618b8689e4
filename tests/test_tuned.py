"""Recorded choices: every routine the tuned table holds replays without a search and keeps the
committed benchmark figures; a search gives the same text as the table; a .S header alone rebuilds
its routine; stale records are refused with a clear error; generation from the table is fast."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from avrmp.bench.catalog import TUNED_EXTRAS, catalog
from avrmp.cli import main
from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate, table_key
from avrmp.routine.rebuild import REGENERATE
from avrmp.routine.tune import untuned
from avrmp.spec import Spec
from avrmp.tuning import table
from avrmp.tuning.choices import Choices, Decision, StaleChoices, parse, render

RESULTS = Path(__file__).parents[1] / "bench" / "results.json"
CATALOG = catalog()


def test_every_catalog_routine_and_extra_is_in_the_table() -> None:
    missing = [table_key(s) for s in CATALOG + TUNED_EXTRAS if table.lookup(table_key(s)) is None]
    assert not missing, f"run avrmp tune --catalog: {missing}"


def test_table_rebuilds_the_committed_benchmark() -> None:
    """Each catalog routine, rebuilt from the table alone (a stale record fails here rather
    than being searched again), costs what the committed benchmark measured (the cost model is
    exact for straight-line code and, on the path without branches taken, for NOP-balanced
    code)."""
    rows = {(r["op"], r["bits"], r["algo"], r["variant"], "looped=True" in r["params"]): r
            for r in json.loads(RESULTS.read_text())}
    checked = 0
    for spec in CATALOG:
        routine = generate(spec, record=table.lookup(table_key(spec)))  # stale: StaleChoices
        assert routine.spec == spec
        row = rows[(spec.op, spec.bits, spec.algo, spec.variant, spec.looped)]
        assert routine.code_bytes == row["code_bytes"], spec
        if spec.runtime_length or spec.looped:
            continue  # loops: only the simulator knows
        cycles = routine.nominal_cycles
        assert cycles == row["core_cycles"], (spec, cycles, row["core_cycles"])
        checked += 1
    assert checked > 60


def test_every_extra_replays_its_record() -> None:
    """The tuned extras (sizes and parts beyond the catalog) replay their records as they are:
    a stale record would make `avrmp gen` search (minutes at large sizes) without saying so."""
    stale = [table_key(s) for s in untuned(TUNED_EXTRAS)]
    assert not stale, f"run avrmp tune --catalog --missing: {stale}"


def test_table_entries_replay_exactly() -> None:
    """A table entry is replayed decision by decision: none left over, none missing, none that
    the replay had to supply (the table is as current as the generator)."""
    for spec in CATALOG[:12] + [s for s in CATALOG if s.algo == "karatsuba"][:6]:
        record = table.lookup(table_key(spec))
        choices = Choices(record)
        spec.algorithm.build(spec.op, spec.looped, n=spec.operand_bytes, variant=spec.variant,
                             levels=spec.levels, d=spec.d, e=spec.e, has_mul=True, ret_bytes=2,
                             choices=choices)
        choices.finish()
        assert choices.made == record, f"{table_key(spec)}: the table lacks a decision"


def test_a_late_decision_is_supplied_to_an_older_record() -> None:
    old = Choices([Decision("form", 1)])
    assert old.decide("form", lambda: 2) == 1
    assert old.decide_late("colours", lambda: "ab") == "ab"
    new = Choices([Decision("form", 1), Decision("colours", "cd")])
    new.decide("form", lambda: 2)
    assert new.decide_late("colours", lambda: "ab") == "cd"
    assert old.made[1] == Decision("colours", "ab") and new.made[1] == Decision("colours", "cd")


@pytest.mark.parametrize("spec", [Spec("mul", 64, "karatsuba", variant="branched"),
                                  Spec("mul", 96, "karatsuba"), Spec("sqr", 128, "karatsuba"),
                                  Spec("mul", 128, "product-scanning"),
                                  Spec("mul", 128, "consecutive-operand-caching"),
                                  Spec("sqr", 96, "product-scanning")],
                         ids=lambda s: s.symbol)
def test_search_gives_the_table_text(spec: Spec) -> None:
    assert generate(spec, tune=True).asm == generate(spec).asm


def test_decisions_round_trip_through_the_header() -> None:
    tree = [Decision("levels", 3, [Decision("base", {"w": 4, "rows_upto": [6, 5, 5]}),
                                   Decision("l_and_h", "joint", [Decision("joint", {})])]),
            Decision("top", False)]
    lines = ["; note: x", "; choices (avrmp rebuild FILE.S makes this routine again from them):",
             *render(tree), "", "\t.text"]
    assert parse(lines) == tree
    assert parse(["; note: x"]) is None


@pytest.mark.parametrize("args", [["mul", "--bits", "256", "--algo", "karatsuba",
                                   "--variant", "branched"],
                                  ["sqr", "--bits", "1024", "--algo", "karatsuba"],
                                  ["mul", "--bits", "160", "--algo", "operand-caching"],
                                  ["mul", "--bits", "64", "--mcu", "attiny85"]],
                         ids=lambda a: "-".join(a[:2] + a[3:4]))
def test_rebuild_from_the_header_alone(args, tmp_path, capsys) -> None:
    assert main(["gen", *args, "-o", str(tmp_path / "a")]) == 0
    asm = Path(capsys.readouterr().out.split()[0])
    assert "; choices (" in asm.read_text()
    assert main(["rebuild", str(asm), "-o", str(tmp_path / "b")]) == 0
    out, _ = capsys.readouterr()
    rebuilt = tmp_path / "b" / asm.name
    assert rebuilt.read_text() == asm.read_text()
    assert "identical" in out


def test_stale_record_is_refused(tmp_path, capsys) -> None:
    spec = Spec("mul", 96, "karatsuba")
    bad = [Decision("levels", 2, [Decision("no such choice", 1)])]
    with pytest.raises(StaleChoices):
        generate(spec, record=bad)
    asm, _ = write_routine(generate(spec), tmp_path)
    asm.write_text(asm.read_text().replace(";   levels: ", ";   stages: "))
    status = main(["rebuild", str(asm), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("avrmp: error: ") and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_missing_takes_stale_records_too(tmp_path) -> None:
    """`avrmp tune --missing` re-searches the entries a change to a technique left stale, not
    only the absent ones."""
    path = tmp_path / "tuned.json"
    current, stale, absent = (Spec("mul", 64, "karatsuba"), Spec("mul", 96, "karatsuba"),
                              Spec("mul", 128, "karatsuba"))
    table.save({table_key(current): table.lookup(table_key(current)),
                table_key(stale): [Decision("levels", 2, [Decision("no such choice", 1)])]}, path)
    assert untuned([current, stale, absent], path) == [stale, absent]


def test_rebuild_refuses_a_file_without_choices(tmp_path, capsys) -> None:
    f = tmp_path / "x.S"
    f.write_text("; something else\n\t.text\n")
    assert main(["rebuild", str(f), "-o", str(tmp_path / "o")]) == 2
    assert "avrmp: error:" in capsys.readouterr().err


def test_tune_writes_the_table(tmp_path, capsys) -> None:
    path = tmp_path / "tuned.json"
    assert main(["tune", "mul", "--bits", "64", "--algo", "karatsuba", "--table",
                 str(path)]) == 0
    key = table_key(Spec("mul", 64, "karatsuba"))
    assert table.lookup(key, path) == table.lookup(key)
    capsys.readouterr()
    assert main(["tune", "--table", str(path)]) == 2  # neither an op nor --catalog
    assert "avrmp: error:" in capsys.readouterr().err


@pytest.mark.parametrize("op", ["mul", "sqr"])
def test_tune_with_jitter_records_what_replays(op, tmp_path, capsys) -> None:
    """tune --jitter: the search also tries jittered allocations of each block (recorded with
    their seed where one wins); what it records replays, and is never slower than the plain
    search's routine."""
    path = tmp_path / "tuned.json"
    assert main(["tune", op, "--bits", "64", "--algo", "karatsuba", "--jitter", "4",
                 "--table", str(path)]) == 0
    spec = Spec(op, 64, "karatsuba")
    jittered = generate(spec, record=table.lookup(table_key(spec), path))
    assert jittered.nominal_cycles <= generate(spec, tune=True).nominal_cycles


def test_generation_from_the_table_is_fast(tmp_path) -> None:
    """The issue's targets: a 256-bit Karatsuba multiplication in under 2 s wall, and with its
    1000-input verification under 5 s (both as a user runs them, new processes)."""
    def wall(*args: str) -> float:
        """The best of two runs: a wall-clock time, so other work on the machine only adds."""
        times = []
        for _ in range(2):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "avrmp.cli", *args], check=True,
                           capture_output=True)
            times.append(time.perf_counter() - start)
        return min(times)

    gen = wall("gen", "mul", "--bits", "256", "--algo", "karatsuba", "-o", str(tmp_path))
    asm = tmp_path / "avrmp_mul256_karatsuba.S"
    check = wall("verify", str(asm), "--symbol", "avrmp_mul256_karatsuba", "--bits", "256",
                 "--op", "mul")
    assert gen < 2.0, f"gen took {gen:.2f} s"
    assert gen + check < 5.0, f"gen + verify took {gen + check:.2f} s"


def test_rebuild_keeps_a_hand_edited_file(tmp_path, capsys) -> None:
    """Rebuilding into the file's own folder overwrites it only when the text is the same."""
    asm, _ = write_routine(generate(Spec("mul", 64, "product-scanning")), tmp_path)
    assert main(["rebuild", str(asm), "-o", str(tmp_path)]) == 0
    assert "identical" in capsys.readouterr().out
    edited = asm.read_text() + "; my own note\n"
    asm.write_text(edited)
    assert main(["rebuild", str(asm), "-o", str(tmp_path)]) == 2
    assert "overwrite" in capsys.readouterr().err
    assert asm.read_text() == edited


def test_rebuild_names_the_file_of_an_edited_spec_line(tmp_path, capsys) -> None:
    asm, _ = write_routine(generate(Spec("mul", 64, "karatsuba")), tmp_path)
    text = asm.read_text()
    spec_line = next(line for line in text.splitlines() if line.startswith("; spec:"))
    asm.write_text(text.replace(spec_line, spec_line + " levels=9"))
    assert main(["rebuild", str(asm), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"avrmp: error: {asm}: --levels 9") and len(err.splitlines()) == 1


def test_rebuild_refuses_a_file_of_several_routines(tmp_path, capsys) -> None:
    """avrmp uecc writes several routines into one .S: rebuild names the command that wrote it
    instead of rebuilding the first routine alone."""
    texts = [generate(Spec("mul", bits, "product-scanning")).text("gnu") for bits in (32, 64)]
    f = tmp_path / "drop_in.S"
    f.write_text(f"; {REGENERATE}avrmp uecc --sizes 4,8 -o src/\n" + "".join(texts))
    assert main(["rebuild", str(f), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "holds 2 routines" in err and "avrmp uecc --sizes 4,8 -o src/" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("old, new", [('"order": 0', '"order": 99'),
                                      ('"order": 0', '"order": -1'),
                                      ('"order": 0', '"order": "x"'),
                                      ('{"order": 0', '{"order": ')],
                         ids=["out of range", "negative", "wrong type", "unreadable"])
def test_rebuild_refuses_tampered_choices(old, new, tmp_path, capsys) -> None:
    asm, _ = write_routine(generate(Spec("mul", 64, "product-scanning")), tmp_path)
    text = asm.read_text()
    assert old in text
    asm.write_text(text.replace(old, new, 1))
    assert main(["rebuild", str(asm), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("avrmp: error: ") and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
