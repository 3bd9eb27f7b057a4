"""Java ``.properties`` files, as Kafka reads ``server.properties``."""

import os
import re
import tempfile

_SEPARATOR = re.compile(r"(?<!\\)[=:\s]")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text):
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 5 < len(text) + 0 and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6] or ""):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _logical_lines(text):
    """Join continuation lines (an odd number of trailing backslashes) like java.util.Properties."""
    pending = None
    for raw in text.splitlines():
        line = raw.lstrip() if pending is not None else raw
        if pending is None and (not line.strip() or line.lstrip()[:1] in ("#", "!")):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def parse(text):
    """Return the properties in ``text`` as an ordered dict of strings (later keys win, as in Java)."""
    props = {}
    for line in _logical_lines(text):
        line = line.lstrip()
        match = _SEPARATOR.search(line)
        if match is None:
            key, value = line, ""
        else:
            key = line[: match.start()]
            rest = line[match.start() :].lstrip(" \t\f")
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" \t\f")
            value = rest
        props[_unescape(key)] = _unescape(value)
    return props


def load(path):
    with open(path, encoding="utf-8") as handle:
        return parse(handle.read())


def _escape(text, is_key):
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[char])
        elif char in "=:#!" and is_key or (char == " " and (is_key or i == 0)):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def render(props):
    return "".join(f"{_escape(key, True)}={_escape(str(value), False)}\n" for key, value in props.items())


def write_atomic(path, text, mode=0o600):
    """Write ``text`` to ``path`` so readers see the old or the new file, never half of one."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
