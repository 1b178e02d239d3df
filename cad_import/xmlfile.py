"""XML reading with line numbers and without entity expansion.

The standard library's expat parser builds an ElementTree while recording the
line of every element, so errors can point at it. Documents that declare
entities (the "billion laughs" and external-entity attacks) are refused.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

import numpy as np

from .errors import MAX_MODEL_BYTES, FileFormatError, check_file_size

#: Largest magnitude accepted for a number in a file (lengths in metres, masses in kg...).
MAX_MAGNITUDE = 1e100


class XmlDocument:
    """A parsed XML file: ``root`` element, and ``line(element)`` for messages."""

    def __init__(self, path, text: bytes | str | None = None):
        self.path = None if path is None else str(path)
        if text is None:
            check_file_size(path, MAX_MODEL_BYTES)
            try:
                text = Path(path).read_bytes()
            except OSError as error:
                raise FileFormatError(path, f"cannot read file: {error.strerror or error}") from None
        self._lines: dict[int, int] = {}
        builder = ET.TreeBuilder()
        parser = expat.ParserCreate()
        keep: list[ET.Element] = []  # keeps ids stable while parsing

        def start(tag, attrs):
            element = builder.start(tag, attrs)
            keep.append(element)
            self._lines[id(element)] = parser.CurrentLineNumber

        def forbid_entities(name, *_):
            raise FileFormatError(
                self.path,
                f"entity declarations are not allowed (entity {name!r})",
                line=parser.CurrentLineNumber,
            )

        parser.StartElementHandler = start
        parser.EndElementHandler = builder.end
        parser.CharacterDataHandler = builder.data
        parser.EntityDeclHandler = forbid_entities
        parser.ExternalEntityRefHandler = lambda *_: False
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        try:
            parser.Parse(text, True)
            self.root = builder.close()
        except expat.ExpatError as error:
            raise FileFormatError(
                self.path, f"not well-formed XML: {expat.ErrorString(error.code)}", line=error.lineno
            ) from None
        except (ValueError, RecursionError) as error:
            raise FileFormatError(self.path, f"cannot parse XML: {error}") from None
        self._keep = keep

    def line(self, element: ET.Element) -> int | None:
        return self._lines.get(id(element))

    def error(self, element: ET.Element | None, problem: str, what: str | None = None) -> FileFormatError:
        """A FileFormatError at ``element`` (described as ``what`` or by its tag)."""
        if element is None:
            return FileFormatError(self.path, problem, what)
        return FileFormatError(self.path, problem, what or describe(element), self.line(element))

    # ------------------------------------------------------------- attributes
    def text_attr(self, element: ET.Element, name: str, default: str | None = None, required=False):
        value = element.get(name)
        if value is None:
            if required:
                raise self.error(element, f"missing attribute {name!r}")
            return default
        return value

    def floats(self, element: ET.Element, name: str, count: int, default=None) -> np.ndarray:
        """``count`` finite numbers from a whitespace-separated attribute."""
        value = element.get(name)
        if value is None:
            if default is None:
                raise self.error(element, f"missing attribute {name!r}")
            return np.array(default, dtype=float)
        parts = value.split()
        try:
            numbers = np.array([float(p) for p in parts], dtype=float)
        except ValueError:
            raise self.error(element, f"attribute {name}={value!r} is not a list of numbers") from None
        if len(numbers) != count:
            raise self.error(element, f"attribute {name}={value!r} needs {count} numbers, got {len(numbers)}")
        if not np.all(np.isfinite(numbers)):
            raise self.error(element, f"attribute {name}={value!r} is not finite")
        if np.any(np.abs(numbers) > MAX_MAGNITUDE):
            raise self.error(element, f"attribute {name}={value!r} is out of range (above {MAX_MAGNITUDE:g})")
        return numbers

    def number(self, element: ET.Element, name: str, default: float | None = None) -> float:
        return float(self.floats(element, name, 1, None if default is None else [default])[0])


def describe(element: ET.Element) -> str:
    """``<joint name="knee">`` style description of an element."""
    name = element.get("name")
    return f"<{element.tag} name={name!r}>" if name is not None else f"<{element.tag}>"
