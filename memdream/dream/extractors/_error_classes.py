r"""Well-known error classes: error lines every developer recognises, each with a short diagnosis.

An error of one of these classes has one cause wherever it shows, whatever program printed it and
however the line reads: ``/usr/bin/env: 'bash\r': No such file or directory`` from one script and
``lib.sh: line 2: $'\r': command not found`` from another are both a script saved with CRLF line
endings. The error → fix extractor (:mod:`memdream.dream.extractors.error_fix`) keys such an error
by its class, so occurrences in two sessions of a project add up to one lesson, and names the
diagnosis in the lesson. Knowing the cause also tells a fix from a step that merely came before the
retry: a fix acts on the cause (its words are the class's ``fix_words``: ``\r``, ``dos2unix``) or
on the file that failed.

| class         | what the error line says                                         | diagnosis                        |
|---------------|------------------------------------------------------------------|----------------------------------|
| crlf          | ``$'\r': command not found``, a shebang's ``bash\r``             | CRLF line endings                |
| port in use   | ``EADDRINUSE``, ``address already in use``, ``port is already    | the port is taken                |
|               | allocated`` (docker)                                             |                                  |
| ssh publickey | ``Permission denied (publickey)``                                | no SSH key for the remote        |
| file watchers | ``ENOSPC: System limit for number of file watchers reached``     | the inotify watch limit is       |
|               |                                                                  | reached                          |
| disk full     | ``ENOSPC``, ``No space left on device``                          | the disk is full                 |
| no module     | ``ModuleNotFoundError: No module named X`` (any X)               | the package is not installed in  |
|               |                                                                  | the Python that ran it           |

Only a missing module's line does not prove its diagnosis (the module may be the project's own, not
written yet, or misspelt): its lesson needs a fix that acts on the environment (a wrapper such as
``poetry run``, an install), the others say their diagnosis even when no fix showed. Node's file
watchers also say ``ENOSPC``: that row comes first, or a watch limit would read as a full
disk. The table stays short on purpose: an entry is an error whose cause is the same everywhere, not
an error that happens to be frequent (a failing test, a compiler's error, a missing file say
nothing of their cause).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorClass:
    name: str  # the lesson's key: stable, whatever the diagnosis's wording becomes
    diagnosis: str  # what the lesson says the error means
    pattern: re.Pattern[str]  # an error line of the class, whatever else it names (a path, a module)
    fix_words: re.Pattern[str]  # words of a command that acts on the cause
    certain: bool = True  # the line alone proves the diagnosis: a lesson even when no fix showed


CLASSES = (
    ErrorClass("crlf", "CRLF line endings",
               re.compile(r"\$'\\r'|\b(?:env|[a-z]*sh|python[\d.]*|node|perl|ruby)\\r\b"),
               re.compile(r"\\r|dos2unix|unix2dos|crlf|line.?endings?|fileformat|\beol\b", re.IGNORECASE)),
    ErrorClass("port in use", "the port is taken",
               re.compile(r"\bEADDRINUSE\b|address already in use|port is already allocated", re.IGNORECASE),
               re.compile(r"\b(?:kill|pkill|killall|lsof|fuser|netstat|ss|stop|down)\b|--port\b|\bPORT=|\bport\b",
                          re.IGNORECASE)),
    ErrorClass("ssh publickey", "no SSH key for the remote",
               re.compile(r"Permission denied \(publickey"),
               re.compile(r"ssh-add|ssh-keygen|ssh-agent|https://|\bgh auth\b|set-url|IdentityFile|GIT_SSH|"
                          r"\bcredential", re.IGNORECASE)),
    ErrorClass("file watchers", "the inotify watch limit is reached",
               re.compile(r"limit for number of file watchers|inotify watch(?:es)? limit", re.IGNORECASE),
               re.compile(r"max_user_watches|sysctl|inotify|polling", re.IGNORECASE)),
    ErrorClass("disk full", "the disk is full",
               re.compile(r"\bENOSPC\b|No space left on device", re.IGNORECASE),
               re.compile(r"\b(?:prune|clean|rm|rmdir|purge|autoremove|du|df|truncate)\b", re.IGNORECASE)),
    ErrorClass("no module", "the package is not installed in the Python that ran it",
               re.compile(r"\bNo module named\b"),
               re.compile(r"\b(?:pip3?|uv|poetry|pipenv|conda|install|sync|activate)\b|\.?venv\b|PYTHONPATH|"
                          r"\s-m\s", re.IGNORECASE),
               certain=False),
)
DIAGNOSES = frozenset(error_class.diagnosis for error_class in CLASSES)


def class_of(lines: list[str]) -> tuple[ErrorClass, str] | None:
    """The class of the first of ``lines`` (a failure's error line first) that shows one, with that line."""
    for line in lines:
        for error_class in CLASSES:
            if error_class.pattern.search(line):
                return error_class, line
    return None


# A shell's location in front of its message: "scripts/x.sh: line 3: ", "/bin/sh: 1: ".
_LOCATION = re.compile(r"^\S+:\s*(?:line\s+)?\d+:\s*")


def shown(line: str) -> str:
    """The error line as a lesson quotes it: a shell's ``<script>: line <n>:`` location is this
    occurrence's, so it is elided (``…$'\\r': command not found``)."""
    located = _LOCATION.match(line)
    return f"…{line[located.end():]}" if located and located.end() < len(line) else line
