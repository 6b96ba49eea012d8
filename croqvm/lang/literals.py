"""Numeric literals: their token, dtype and the errors of LANGUAGE.md §2.2.

The scanner hands over everything that starts like a number (digits with any letters,
dots and exponent signs glued to them), so every malformed spelling gets one clear error
here instead of being split into surprising tokens.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from ..core import dtypes, numerics
from .tokens import FLOAT, INT, Token

S32_MAX, S64_MAX = 2**31 - 1, 2**63 - 1
U32_MAX, U64_MAX = 2**32 - 1, 2**64 - 1

_HEX = re.compile(r"0[xX](?P<digits>[0-9a-fA-F]*)(?P<suffix>[A-Za-z0-9_]*)")
_DEC = re.compile(r"(?P<int>[0-9]*)(?P<dot>\.)?(?P<frac>[0-9]*)"
                  r"(?:[eE](?P<exp>[+-]?[0-9]+))?(?P<suffix>[A-Za-z0-9_]*)")
_INT_SUFFIX = re.compile(r"(?i)u?l{0,2}")  # §2.2.1: optional u, then l or ll, any case
_FLOAT_SUFFIX = ("", "f", "F")

# Hints for exponents: beyond this the decimal spelling is too long to be a useful hint.
_MAX_HINT_EXPONENT = 40
# The longest literal read: an f64 written out exactly in positional notation takes up to
# about 1,100 characters (5e-324: 323 zeros, then 751 digits), and Python's int() refuses
# strings of more than 4,300.
MAX_LITERAL_CHARS = 4096


def number_token(text: str, span, sink) -> Token:
    """The INT or FLOAT token for ``text``; errors still yield a token so parsing goes on."""
    if len(text) > MAX_LITERAL_CHARS:
        sink.error(span, f"numeric literal of {len(text)} characters is too long (croqvm "
                         f"reads literals of up to {MAX_LITERAL_CHARS}).")
        return Token(INT, 0, span, "s32")
    m = _HEX.fullmatch(text)
    if m:
        if not m["digits"]:
            sink.error(span, f"invalid hexadecimal literal '{text}'.")
            return Token(INT, 0, span, "s32")
        return _int_token(text, int(m["digits"], 16), m["suffix"], span, sink)
    m = _DEC.fullmatch(text)
    if m is None:
        sink.error(span, f"invalid numeric literal '{text}'.")
        return Token(INT, 0, span, "s32")
    if m["exp"] is not None:
        return _exponent_error(m, span, sink)
    if m["dot"]:
        return _float_token(m, text, span, sink)
    digits = m["int"]
    if len(digits) > 1 and digits[0] == "0":
        sink.error(span, f"integer literal '{text}' has a leading zero (octal literals are "
                         "not supported).", hint=f"write {digits.lstrip('0') or '0'}")
        return Token(INT, int(digits), span, "s32")
    return _int_token(text, int(digits), m["suffix"], span, sink)


def _int_token(text, value, suffix, span, sink) -> Token:
    if not _INT_SUFFIX.fullmatch(suffix):
        hint = f"write {text[:-1]}.0f" if suffix in ("f", "F") else None
        sink.error(span, f"invalid suffix '{suffix}' on integer literal '{text}'.", hint=hint)
        suffix = ""
    unsigned, long_long = "u" in suffix.lower(), "ll" in suffix.lower()
    # §2.2.1: the smallest of s32/s64 (u32/u64) that holds the value; ll forces 64 bits.
    if unsigned:
        if value > U64_MAX:
            sink.error(span, f"unsigned integer literal '{text}' out of range "
                             f"[0, {U64_MAX}].")
            return Token(INT, U64_MAX, span, "u64")
        return Token(INT, value, span, "u32" if value <= U32_MAX and not long_long else "u64")
    if value > S64_MAX:
        sink.error(span, f"signed integer literal '{text}' out of range [0, {S64_MAX}].")
        return Token(INT, S64_MAX, span, "s64")
    return Token(INT, value, span, "s32" if value <= S32_MAX and not long_long else "s64")


def _float_token(m, text, span, sink) -> Token:
    whole, frac, suffix = m["int"], m["frac"], m["suffix"]
    if not whole or not frac:
        where = "before" if not whole else "after"
        tail = suffix if suffix in _FLOAT_SUFFIX else ""
        sink.error(span, f"floating-point literal '{text}' needs a digit {where} the '.'.",
                   hint=f"write {whole or '0'}.{frac or '0'}{tail}")
        whole, frac = whole or "0", frac or "0"
    if suffix not in _FLOAT_SUFFIX:
        sink.error(span, f"invalid suffix '{suffix}' on floating-point literal '{text}'.")
        suffix = ""
    exact = Fraction(f"{whole}.{frac}")
    dtype = "f32" if suffix else "f64"
    value = numerics.value_of(exact, dtypes.F32 if suffix else dtypes.F64)
    if value == float("inf"):
        sink.error(span, f"floating-point literal '{text}' is out of range for {dtype}.")
    return Token(FLOAT, value, span, dtype)


def _exponent_error(m, span, sink) -> Token:
    """§2.2.2: exponents are refused; the hint spells the same number in decimal."""
    whole, frac, suffix = m["int"] or "0", m["frac"] or "0", m["suffix"]
    exp = int(m["exp"]) if len(m["exp"]) < 12 else _MAX_HINT_EXPONENT + 1
    hint = None
    f_suffix = suffix if suffix in _FLOAT_SUFFIX else ""
    if abs(exp) <= _MAX_HINT_EXPONENT:
        hint = f"write {_decimal_spelling(whole, frac, exp)}{f_suffix}"
    sink.error(span, "floating-point exponents are not supported", hint=hint)
    try:
        exact = Fraction(Decimal(f"{whole}.{frac}").scaleb(exp))
    except (InvalidOperation, ValueError, OverflowError):
        exact = Fraction(0)
    value = numerics.value_of(exact, dtypes.F32 if f_suffix else dtypes.F64)
    return Token(FLOAT, value, span, "f32" if f_suffix else "f64")


def _decimal_spelling(whole: str, frac: str, exp: int) -> str:
    """``1``, ``0``, ``-3`` -> ``0.001``: plain D+.D+ with at least one digit each side."""
    text = format(Decimal(f"{whole}.{frac}").scaleb(exp), "f")
    if "." not in text:
        return text + ".0"
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text

