"""The ARM7TDMI techniques: every one verified in the emulator at several sizes, the builder's
static count equal to the trace timing on random inputs (every multiply at m = 4), the
committed benchmark's cycles reproduced, and bad requests refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run

from avrmp.bench.arm import arm_catalog
from avrmp.routine.arm import arm_routine
from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.techniques.arm7tdmi import operand_caching_chain as chain
from avrmp.techniques.arm7tdmi.kernel import ArmKernel
from avrmp.techniques.arm7tdmi.operand_caching import block_orders, build_order
from avrmp.techniques.arm7tdmi.registry import ARM_ALGORITHMS, ARM_DEFAULT
from avrmp.verify import arm_checks
from avrmp.verify.arm_checks import verify_arm

ROOT = Path(__file__).resolve().parent.parent
SIZES = (64, 96, 128, 192, 320)


@pytest.fixture(autouse=True)
def _few_byte_runs(monkeypatch) -> None:
    """Many routines here: a tenth of the byte runs each (the benchmark and the CLI run them
    all)."""
    monkeypatch.setattr(arm_checks, "ARM_RUN_BUDGET", arm_checks.ARM_RUN_BUDGET // 10)


def verified(routine, variant: str, tests: int, seed: int, tmp_path):
    """The routine written to tmp_path and run through verify_arm on its own size."""
    asm, _ = write_routine(routine, tmp_path)
    return verify_arm(asm, routine.spec.symbol, "mul", routine.spec.words, variant, tests,
                      seed=seed, workdir=tmp_path)


@pytest.mark.parametrize("algo, bits", [
    (a, b) for a in ARM_ALGORITHMS for b in SIZES
    if not (ARM_ALGORITHMS[a].even_only and (b // 32) % 2)])  # hybrid: even words only
def test_technique_verified(algo, bits, tmp_path) -> None:
    routine = generate(Spec("mul", bits, algo, target="arm7tdmi"))
    report = verified(routine, "branchfree", 150, 3, tmp_path)
    assert report.passed, report.first_failure()
    assert report.core_typical == routine.model_cycles  # the one table, two uses
    assert report.core_min < report.core_max  # zero words end the multiplier early


CONSTTIME = [a for a in ARM_ALGORITHMS if "consttime" in ARM_ALGORITHMS[a].variants]


@pytest.mark.parametrize("algo, bits", [(a, b) for a in CONSTTIME
                                        for b in (32, 64, 96, 160, 256, 320)])
def test_consttime_takes_the_same_cycles_on_every_input(algo, bits, tmp_path) -> None:
    routine = generate(Spec("mul", bits, algo, "consttime", target="arm7tdmi"))
    assert routine.spec.symbol.endswith("_ct")
    report = verified(routine, "consttime", 150, 4, tmp_path)
    assert report.passed, report.first_failure()  # edge cases: zero words, top bits clear
    assert report.core_min == report.core_max == routine.model_cycles
    plain = generate(Spec("mul", bits, algo, target="arm7tdmi"))
    report = verified(plain, "consttime", 20, 4, tmp_path)
    assert not report.passed  # the check can fail: the plain routine's m varies


def test_consttime_operand_caching_beats_consttime_operand_scanning() -> None:
    """The carry-chain blocks (e = 3 beside the mask and x) against one row at a time."""
    for bits in (160, 192, 256, 512):
        cached, scanned = (generate(Spec("mul", bits, a, "consttime", target="arm7tdmi"))
                           for a in ("operand-caching", "operand-scanning"))
        assert cached.model_cycles < 0.9 * scanned.model_cycles


def test_seed001_multiplier_count_is_the_trace_at_m2(tmp_path) -> None:
    routine = generate(Spec("mul", 160, "operand-caching", target="arm7tdmi"))
    report = verified(routine, "branchfree", 10, 1, tmp_path)
    multiplies = sum(v for k, v in routine.classes.items() if k in ("umull", "umlal"))
    assert multiplies == 25
    assert report.core_seed001_typical == report.core_typical - 2 * multiplies


def test_committed_benchmark_reproduced(tmp_path) -> None:
    rows = json.loads((ROOT / "bench" / "arm7tdmi.json").read_text())
    assert {(r["algo"], r["variant"], r["bits"]) for r in rows} == {
        (s.algo, s.variant, s.bits) for s in arm_catalog()}
    assert any(r["variant"] == "consttime" for r in rows)
    for r in rows:
        if r["bits"] <= 256:
            routine = generate(Spec("mul", r["bits"], r["algo"], r["variant"],
                                    target="arm7tdmi"))
            assert routine.model_cycles == r["core_cycles"] == r["model_cycles"]
            assert r["verified"]


@pytest.mark.parametrize("argv, message", [
    (["gen", "mul", "--target", "arm7tdmi", "--bits", "100"], "multiple of 32"),
    (["gen", "mul", "--target", "arm7tdmi", "--bits", "160", "--algo", "hybrid"], "even"),
    (["gen", "sqr", "--target", "arm7tdmi", "--bits", "160"], "serves mul"),
    (["gen", "mul", "--target", "arm7tdmi", "--bits", "160", "--algo", "karatsuba"],
     "unknown ARM7TDMI algorithm"),
    (["gen", "mul", "--target", "arm7tdmi", "--bits", "160", "--dialect", "avrasm2"],
     "--dialect does not apply"),
    (["gen", "mul", "--target", "arm7tdmi", "--bits", "160", "--tune"], "--tune does not apply"),
    (["gen", "mul", "--target", "arm7tdmi", "--bits", "160", "--e", "4"], "does not apply"),
    (["gen", "mul", "--target", "arm7tdmi", "--bits", "160", "--algo", "product-scanning",
      "--variant", "consttime"], "offers branchfree"),
    (["gen", "mul", "--bits", "160", "--variant", "consttime"], "the ARM7TDMI's"),
])
def test_bad_requests(argv, message, capsys, tmp_path) -> None:
    status, _, err = run([*argv, "-o", tmp_path / "out"], capsys)
    assert status == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_gen_and_verify_from_the_command_line(capsys, tmp_path) -> None:
    status, out, _ = run(["gen", "mul", "--target", "arm7tdmi", "--bits", "192", "--algo",
                          "operand-caching", "-o", tmp_path], capsys)
    assert status == 0
    asm = tmp_path / "avrmp_mul192_operand_caching_arm.S"
    assert "@ spec: op=mul bits=192 algo=operand-caching" in asm.read_text()
    header = (tmp_path / "avrmp_mul192_operand_caching_arm.h").read_text()
    assert "uint32_t *r, const uint32_t *a, const uint32_t *b" in header
    status, out, _ = run(["verify", asm, "--target", "arm7tdmi", "--symbol",
                          "avrmp_mul192_operand_caching_arm", "--bits", "192", "--op", "mul",
                          "--tests", "50", "--seed", "2", "--json", tmp_path / "r.json"], capsys)
    assert status == 0 and out.startswith("PASS")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] and report["target"] == "arm7tdmi" and report["seed"] == 2
    assert report["core_min"] <= report["core_typical"] <= report["core_max"]
    wrong_size = ["verify", asm, "--target", "arm7tdmi", "--symbol",
                  "avrmp_mul192_operand_caching_arm", "--bits", "96", "--op", "mul", "--tests",
                  "5", "--seed", "2"]
    status, _, err = run(wrong_size, capsys)
    assert status == 2 and "give --bits 192" in err  # its spec line says so
    asm.write_text(asm.read_text().replace("@ spec:", "@ was:"))
    status, _, err = run(wrong_size, capsys)
    assert status == 1 and "verification failed" in err  # a wrong size gives wrong products


def test_consttime_is_checked_on_the_arm7tdmi_only(capsys, tmp_path) -> None:
    asm = tmp_path / "x.S"
    asm.write_text("")
    status, _, err = run(["verify", asm, "--symbol", "x", "--bits", "64", "--op", "mul",
                          "--variant", "consttime"], capsys)
    assert status == 2 and "ARM7TDMI" in err and err.count("\n") == 1


def test_hybrid_catcher_bytes_hold_at_the_largest_size(tmp_path) -> None:
    """64 words: the most blocks a super-column has, so the most carries a catcher byte counts
    (the edge cases of the load include all-ones operands)."""
    bits = ARM_ALGORITHMS["hybrid"].max_words * 32
    routine = generate(Spec("mul", bits, "hybrid", target="arm7tdmi"))
    report = verified(routine, "branchfree", 20, 5, tmp_path)
    assert report.passed, report.first_failure()


@pytest.mark.parametrize("words", (1, 2, 3, 4, 5, 6, 8, 16))
def test_operand_caching_takes_its_fastest_block_order(words) -> None:
    orders = block_orders(words)
    assert orders and all(sum(o) == words and max(o) <= 3 for o in orders)
    cycles = {(o, h): build_order(words, o, h).static_cycles() for o in orders
              for h in (False, True)}
    cycles |= {(o, "chain", spill): chain.build_chained(words, o, spill_a=spill).static_cycles()
               for o in block_orders(words, chain.E) for spill in (False, True)}
    routine = generate(Spec("mul", 32 * words, "operand-caching", target="arm7tdmi"))
    assert routine.model_cycles == min(cycles.values())
    if words == 5:  # R[2..4] handed from the first block to the second in registers
        assert cycles[(2, 3), True] < cycles[(2, 3), False]
        assert min(cycles, key=cycles.get) == ((2, 3), True)
    if words == 8:  # one carry chain per b word: e = 4, two blocks; Table 7: 700
        assert min(cycles, key=cycles.get) == ((4, 4), "chain", True)
        assert cycles[(4, 4), "chain", True] < cycles[(4, 4), "chain", False]
        assert cycles[(3, 2, 3), False] < cycles[(3, 3, 2), False]
        assert routine.model_cycles < 700


@pytest.mark.parametrize("variant, words", [("branchfree", w) for w in (1, 3, 5, 8, 9)]
                         + [("consttime", w) for w in (2, 5, 7)])
def test_operand_caching_chain_verified(variant, words, tmp_path) -> None:
    """Every block order of the carry-chain form is correct (short blocks first, last and
    between; the partial words through the carry register or in LDM groups), with the a
    pointer kept or spilled (pushed for a block, its register lent to b); the constant-time
    form takes one time on every input."""
    consttime = variant == "consttime"
    spec = Spec("mul", 32 * words, "operand-caching", variant, target="arm7tdmi")
    for order in block_orders(words, chain.E_CONSTTIME if consttime else chain.E):
        for spill in (False, True)[:len(order)]:
            body = chain.build_chained(words, order, consttime, spill)
            routine = arm_routine(spec, ArmKernel(body))
            report = verified(routine, variant, 30, 8, tmp_path)
            assert report.passed, (order, spill, report.first_failure())
            assert report.core_typical == routine.model_cycles
            if consttime:
                assert report.core_min == report.core_max


def test_default_algorithm_is_the_fastest() -> None:
    """`avrmp gen --target arm7tdmi` without --algo takes the fastest branch-free technique."""
    for bits in (64, 160, 192, 256, 512):
        cycles = {a: generate(Spec("mul", bits, a, target="arm7tdmi")).model_cycles
                  for a in ARM_ALGORITHMS
                  if not (ARM_ALGORITHMS[a].even_only and (bits // 32) % 2)}
        assert cycles[ARM_DEFAULT] == min(cycles.values()), (bits, cycles)


@pytest.mark.parametrize("words", (3, 5, 8))
def test_operand_caching_hand_over_verified(words, tmp_path) -> None:
    """Every order with the hand-over (a short first block keeping the second's first words
    in registers) is correct, whichever the search keeps."""
    spec = Spec("mul", 32 * words, "operand-caching", target="arm7tdmi")
    for order in block_orders(words):
        routine = arm_routine(spec, ArmKernel(build_order(words, order, handover=True)))
        report = verified(routine, "branchfree", 30, 7, tmp_path)
        assert report.passed, (order, report.first_failure())
