"""The sha256 of the generated .S and .h of every routine in the default benchmark catalog, pinned in
tests/catalog_digests.json, so that a change meant to leave the output alone (a restructure, a
faster generator) proves it did: test_digests.py regenerates and compares.

Each routine has three digests: the .S text, the .h text, and the .S code without its comments
(`code`, local labels renamed in order), so a change to the comments or label names alone (more
recorded choices, say) can be re-pinned while the code is shown unchanged:

    python tests/catalog_digests.py            # compare, print what differs
    python tests/catalog_digests.py --update   # re-pin every digest
    python tests/catalog_digests.py --update --same-code   # re-pin, refusing any change of code

Never edit the JSON by hand.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

PINS = Path(__file__).with_name("catalog_digests.json")
LOCAL_LABEL = re.compile(r"\.L[A-Za-z_][A-Za-z0-9_]*")


def spec_key(spec) -> str:
    looped = " looped" if spec.looped else ""
    return f"{spec.op} {spec.bits} {spec.algo} {spec.variant}{looped}"


def code_only(asm: str) -> str:
    """The assembly without comments (a `;` starts one), without the preprocessor's guards (an
    #error for another part changes no byte where the routine builds), without the lines left
    empty, and with its local labels renamed .L1, .L2, ... in order of first appearance (a
    label's name, like a comment, does not change the machine code)."""
    lines = (line.split(";", 1)[0].rstrip() for line in asm.splitlines()
             if not line.startswith("#"))
    text = "\n".join(line for line in lines if line) + "\n"
    names: dict[str, str] = {}
    return LOCAL_LABEL.sub(lambda m: names.setdefault(m[0], f".L{len(names) + 1}"), text)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def digests_of(spec) -> dict[str, str]:
    from avrmp.routine.generate import generate

    routine = generate(spec)
    return {"S": _sha(routine.asm), "h": _sha(routine.header), "code": _sha(code_only(routine.asm))}


def _keyed(spec) -> tuple[str, dict[str, str]]:
    return spec_key(spec), digests_of(spec)


def catalog_specs() -> list:
    from avrmp.bench.catalog import catalog

    return catalog()


def current(jobs: int = 1) -> dict[str, dict[str, str]]:
    specs = catalog_specs()
    if jobs <= 1:
        return dict(map(_keyed, specs))
    with ProcessPoolExecutor(jobs) as pool:
        return dict(pool.map(_keyed, specs))


def pinned() -> dict[str, dict[str, str]]:
    return json.loads(PINS.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="re-pin the digests")
    ap.add_argument("--same-code", action="store_true",
                    help="with --update: refuse if any routine's code (comments aside) changed")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    args = ap.parse_args()
    now = current(args.jobs)
    old = pinned() if PINS.exists() else {}
    changed = sorted(k for k in now if old.get(k) != now[k])
    code_changed = sorted(k for k in now if k in old and old[k]["code"] != now[k]["code"])
    for k in changed:
        what = "new" if k not in old else "code" if k in code_changed else "comments"
        print(f"{k}: {what}")
    if args.update:
        if args.same_code and (code_changed or set(now) != set(old)):
            print("refused: the code changed (or the catalog did)", file=sys.stderr)
            return 1
        PINS.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {PINS} ({len(now)} routines)")
        return 0
    return 1 if changed or set(old) - set(now) else 0


if __name__ == "__main__":
    sys.exit(main())
