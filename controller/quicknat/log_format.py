"""Log records as text or as JSON lines (`--log-format`), one schema for both
processes: {"time": "...Z", "level": "info", "process": "quicknat-controller",
"message": "...", "logger": "..."}; quicknat-swpath writes the same keys
(swpath/src/util/log.c), so one log pipeline reads both."""

from __future__ import annotations

import json
import logging
import time

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def __init__(self, process: str) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        data = {
            "time": f"{when}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "process": self.process,
            "message": record.getMessage(),
            "logger": record.name,
        }
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data)


def configure(log_format: str, process: str, level: int = logging.INFO) -> None:
    """The root logger's one handler (stderr) in `log_format` ("text", "json")."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter(process))
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
