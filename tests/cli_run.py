"""avrmp's command line run in-process, for the tests."""

from __future__ import annotations

from avrmp.cli import main


def run(argv: list, capsys) -> tuple[int, str, str]:
    """avrmp in-process: (status, stdout, stderr).  An exception other than SystemExit escaping
    main() is a traceback for the user, so it fails the test by propagating."""
    try:
        status = main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err
