"""C++ device functions in the host text (LANGUAGE.md §6.10.4; Croqtile:
call-and-device.md).

``__device__`` functions (and ``__co_device__`` ones whose header is C++) are found in the
text between Croqtile functions. Their signature is read so that ``call`` can be checked
and lowered; their text is compiled as it stands: with the kernels by nvcc on the CUDA
path, and for the CPU by the host C++ compiler (``croqvm.cuda.cxx``). A function croqvm can not
call (a template, a pointer or a type it does not know) is still recorded, with the reason,
so that a call of it gets a clear error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .preprocess import HOST_LEXEME
from ..core.source import Span

# C++ scalar types -> croqvm element types (LANGUAGE.md §12.1)
C_TYPES = {
    "bool": "bool", "int": "s32", "signed": "s32", "signed int": "s32", "int32_t": "s32",
    "unsigned": "u32", "unsigned int": "u32", "uint32_t": "u32",
    "long long": "s64", "long long int": "s64", "int64_t": "s64",
    "unsigned long long": "u64", "unsigned long long int": "u64", "uint64_t": "u64",
    "short": "s16", "int16_t": "s16", "unsigned short": "u16", "uint16_t": "u16",
    "int8_t": "s8", "signed char": "s8", "uint8_t": "u8", "unsigned char": "u8",
    "float": "f32", "double": "f64",
}
# words of a header that say nothing about the signature
_QUALIFIERS = ("__device__", "__co_device__", "__host__", "__forceinline__", "__noinline__",
               "inline", "static", "constexpr", "extern", '"C"')

_START = re.compile(r"(?:\btemplate\s*<[^;{}]*>\s*)?\b(?:__device__|__co_device__)\b")
_HEADER = re.compile(r"(?P<ret>[A-Za-z_][\w\s:*&]*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*"
                     r"\((?P<params>[^(){};]*)\)\s*$", re.S)


@dataclass
class CxxFunction:
    """A C++ device function: its name, result (an element type name, None for void),
    parameters (element type names, ``f32*`` for a pointer to elements), text as written,
    the span of its name, and why croqvm can not call it (None when it can)."""
    name: str
    ret: str | None
    params: list[str]
    text: str
    span: Span
    problem: str | None = None


def find_device_functions(text: str, lines, skip: list[tuple[int, int]]) -> list[CxxFunction]:
    """The C++ device functions of ``text`` (comments removed) outside the ``skip``
    ranges (the Croqtile functions), in file order."""
    found = []
    for m in _START.finditer(text):
        if any(a <= m.start() < b for a, b in skip):
            continue
        body = _body_after(text, m.end())
        if body is None:
            continue
        open_, close = body
        header = text[m.end():open_]
        for word in _QUALIFIERS:
            header = re.sub(r"(?<![\w\"])" + re.escape(word) + r"(?![\w\"])", " ", header)
        h = _HEADER.match(header.strip())
        if h is None:
            continue
        name = h.group("name")
        at = re.search(r"\b" + name + r"\s*\(", text[m.end():open_])
        start = m.end() + at.start() if at else m.start()
        span = lines.span(start, start + len(name))
        fn = CxxFunction(name, None, [], _extern_first(text[m.start():close]), span)
        if m.group().lstrip().startswith("template"):
            fn.problem = "it is a template"
        else:
            _read_signature(fn, " ".join(h.group("ret").split()), h.group("params"))
        found.append(fn)
    return found


def _extern_first(text: str) -> str:
    """``extern "C"`` moved before the CUDA words, where nvcc wants it."""
    return re.sub(r'^((?:__co_device__|__device__)(?:\s+__\w+__)*)\s+extern\s+"C"',
                  r'extern "C" \1', text)


def _body_after(text: str, pos: int):
    """``(offset of '{', offset after its '}')`` of the body that follows ``pos``, or None
    when a ';' (a declaration) comes first."""
    depth, open_ = 0, None
    for m in HOST_LEXEME.finditer(text, pos):
        kind = m.lastgroup
        if kind == "brace":
            if m.group() == "{":
                depth += 1
                open_ = m.start() if open_ is None else open_
            else:
                depth -= 1
                if depth == 0 and open_ is not None:
                    return open_, m.end()
        if open_ is None and ";" in text[pos:m.start()]:
            return None
    return None


def _read_signature(fn: CxxFunction, ret: str, params: str) -> None:
    if ret != "void":
        fn.ret = C_TYPES.get(ret)
        if fn.ret is None:
            fn.problem = f"its result type '{ret}' is not a scalar type croqvm knows"
            return
    params = params.strip()
    if params in ("", "void"):
        return
    for p in params.split(","):
        words = p.strip()
        m = re.fullmatch(r"(?:const\s+)?(?P<type>[A-Za-z_][\w\s]*?)\s*(?P<ptr>\*?)\s*"
                         r"(?:(?:const\s+)?[A-Za-z_]\w*)?", words)
        dtype = C_TYPES.get(" ".join(m.group("type").split())) if m else None
        if dtype is None:
            fn.problem = (f"its parameter '{words}' is neither a scalar nor a pointer to "
                          f"elements of a type croqvm knows")
            return
        fn.params.append(dtype + m.group("ptr"))
