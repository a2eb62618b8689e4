"""Every routine of the default benchmark catalog regenerates to the pinned text
(tests/catalog_digests.json, written by tests/catalog_digests.py): a change meant to leave the
generated code alone cannot move a byte of it, and one that does must re-pin on purpose."""

from __future__ import annotations

import pytest
from catalog_digests import catalog_specs, code_only, digests_of, pinned, spec_key

PINS = pinned()
SPECS = catalog_specs()


def test_pins_cover_the_catalog() -> None:
    assert sorted(PINS) == sorted(spec_key(s) for s in SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=spec_key)
def test_generated_text_matches_the_pin(spec) -> None:
    now, pin = digests_of(spec), PINS[spec_key(spec)]
    assert now["code"] == pin["code"], "the generated code changed"
    assert now == pin, "the generated comments changed (the code did not)"


def test_code_only_drops_comments_and_empty_lines() -> None:
    asm = "; header\n\n\tadd r1, r2\t; why\nlabel:\n"
    assert code_only(asm) == "\tadd r1, r2\nlabel:\n"


def test_code_only_renames_local_labels_in_order() -> None:
    asm = "\tbrts .LaddM7\n.LsubM6:\n\trjmp .LaddM7\n.LaddM7:\n"
    assert code_only(asm) == "\tbrts .L1\n.L2:\n\trjmp .L1\n.L1:\n"
