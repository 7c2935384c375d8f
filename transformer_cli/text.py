"""User text inside one-line messages: control characters escaped, long values cut, look-alike letters named.

A key or a name comes from a file the user may not have written; printed raw, a newline would split the
message, an escape code would drive the terminal and a lone surrogate would crash the encoder.
"""

from __future__ import annotations

LIMIT = 80  # characters of a user value shown in a message

# Letters that look like the Latin ones of the spec keys: a small, deliberate subset of Unicode's confusables
# (NFKC already folds fullwidth and mathematical letters).
_LOOKALIKES = str.maketrans(
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαικνορυ" + "АВЕКМНОРСТХаеорсхуіјѕԁһ",
    "ABEZHIKMNOPTYXaikvopu" + "ABEKMHOPCTXaeopcxyijsdh",
)


def escaped(text: object) -> str:
    """`text` with every non-printable character (controls, surrogates, bidi overrides) escaped as repr does it.

    Escape codes, newlines, bidi overrides and lone surrogates then cannot restyle the terminal, break a line
    in two or crash the encoder; the text printed is the text read, readable: a newline shows as \\n.
    """
    text = str(text)
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def value_text(value: object) -> str:
    """A spec key's value in a summary line: true and false as YAML spells them, a list in brackets, numbers %g."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in value) + "]"
    return str(value)


def shown(text: str, limit: int = LIMIT) -> str:
    """`text` escaped and cut to `limit` characters, for a message."""
    text = escaped(text)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def codepoint(char: str) -> str:
    """'U+039D GREEK CAPITAL LETTER NU'."""
    import unicodedata  # (here: only a bad input's message needs it, and start-up counts)

    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def lookalike_hint(text: str, known: list[str]) -> str:
    """' (looks like 'N' but is U+039D GREEK CAPITAL LETTER NU)' when `text` imitates a known word, else ''."""
    import unicodedata

    plain = unicodedata.normalize("NFKC", text).translate(_LOOKALIKES)
    if plain == text or plain not in known:
        return ""
    odd = next(c for c in text if not c.isascii())
    verb = "is" if len(text) == 1 else "holds"
    return f" (looks like '{plain}' but {verb} {codepoint(odd)})"
