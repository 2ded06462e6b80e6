"""--log-format json: one object per line, the keys swpath writes too."""

from __future__ import annotations

import json
import logging

from quicknat.log_format import JsonFormatter


def test_a_record_is_one_json_line_with_the_shared_keys() -> None:
    record = logging.LogRecord(
        "quicknat.controller", logging.WARNING, __file__, 1, 'a "quoted" %s', ("word",), None
    )
    line = JsonFormatter("quicknat-controller").format(record)
    assert "\n" not in line
    data = json.loads(line)
    assert data["level"] == "warning" and data["process"] == "quicknat-controller"
    assert data["message"] == 'a "quoted" word' and data["logger"] == "quicknat.controller"
    assert data["time"].endswith("Z") and len(data["time"]) == len("2026-01-01T00:00:00.000Z")


def test_an_exception_is_in_the_record() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    data = json.loads(JsonFormatter("p").format(record))
    assert "ValueError: boom" in data["exception"]
