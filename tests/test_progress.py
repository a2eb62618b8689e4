"""Progress on stderr: a bar on a terminal, whole lines in a log, nothing when disabled."""

from __future__ import annotations

import io

from avrmp import progress


class _Log(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_a_log_gets_whole_lines_and_a_final_count(monkeypatch) -> None:
    log = _Log()
    monkeypatch.setattr("sys.stderr", log)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    for _ in progress.progress_bar(range(3), desc="bench", unit="routine"):
        pass
    text = log.getvalue()
    assert "\r" not in text and text.endswith("\n")
    assert "bench" in text and "3/3" in text.splitlines()[-1]
    lines = text.splitlines()
    assert len(lines) == len(set(lines))  # the closing redraw does not repeat the last line


def test_a_short_run_prints_nothing_to_a_log(monkeypatch) -> None:
    log = _Log()
    monkeypatch.setattr("sys.stderr", log)
    bar = progress.progress_bar(range(3), desc="bench")
    for i in bar:
        bar.set_postfix_str(f"routine {i}")  # drawn at once on a terminal, not in a log
    assert log.getvalue() == ""


def test_disabled_prints_nothing(monkeypatch) -> None:
    log = _Log()
    monkeypatch.setattr("sys.stderr", log)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    for _ in progress.progress_bar(range(3), enabled=False, desc="bench"):
        pass
    assert log.getvalue() == ""
