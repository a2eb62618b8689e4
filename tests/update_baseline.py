"""Regenerate tests/baseline_karatsuba.json from the simulator: the core cycles of every Karatsuba
routine in the benchmark catalog (default levels, atmega128), for test_karatsuba.py's regression pin.

    python tests/update_baseline.py

Run it after making a routine faster (the test prints a note when it sees one); a routine that
fails verification is not written.  Never edit the JSON by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from avrmp.bench.measure import measure
from avrmp.spec import Spec

BASELINE = Path(__file__).with_name("baseline_karatsuba.json")
MCU = "atmega128"
SIZES = (48, 64, 80, 96, 128, 160, 192, 224, 256)
VARIANTS = ("branchfree", "branched")


def key(bits: int, variant: str) -> str:
    return f"{bits}/{variant}"


def main() -> int:
    cycles = {}
    for bits in SIZES:
        for variant in VARIANTS:
            row = measure(Spec("mul", bits, "karatsuba", variant=variant, mcu=MCU), tests=20)
            if not row.verified:
                print(f"mul {bits} {variant}: FAILS verification ({row.failure}); not written",
                      file=sys.stderr)
                return 1
            cycles[key(bits, variant)] = row.core_cycles
            print(f"mul {bits:4} {variant:10} {row.core_cycles:6} core cycles")
    data = {"op": "mul", "algo": "karatsuba", "mcu": MCU, "levels": "default",
            "core_cycles": cycles}
    BASELINE.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {BASELINE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
