"""Tokens: the contract between the lexer and the parser (LANGUAGE.md §2).

Token kinds:
- ``INT``, ``FLOAT``: numeric literals; ``value`` is the Python number, ``dtype`` its type
  name (``s32``, ``s64``, ``u32``, ``u64``, ``f32``, ``f64``) per §2.2.
- ``STRING``: ``value`` is the unescaped text (adjacent strings already concatenated).
- ``NAME``: identifiers, ``value`` the text. Reserved words are ``KEYWORD`` instead.
- ``KEYWORD``: a reserved word of §2.1.3 (element-type names included); ``value`` = text.
- ``MEMBER``: a member token of §2.4.2 such as ``.at``; ``value`` is the text with the dot.
- ``GROUP4``: the token ``group-4``.
- ``OP``: operators and punctuation of §2.4.1; ``value`` is the text (``#+``, ``=>``, ``{``).
- ``EOF``: end of one ``__co__`` function's token stream.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.source import Span

INT, FLOAT, STRING, NAME, KEYWORD, MEMBER, GROUP4, OP, EOF = (
    "INT", "FLOAT", "STRING", "NAME", "KEYWORD", "MEMBER", "GROUP4", "OP", "EOF")

RESERVED = frozenset("""
auto mdspan ituple stream event frag print println local shared global term device cluster
block group thread mutable int bool half bfp16 float double void true false inf nullptr dma
tma swap rotate mma assert sync barrier fence cooperative trigger if else inthreads parallel
by with in foreach apply reduce_max reduce_sum all_reduce_sum copy wait call select return
where while break vectorize unroll continue yield asm volatile goto cdiv after
s8 s16 s32 s64 u8 u16 u32 u64 f16 bf16 f32 f64 tf32 f8_e4m3 f8_e5m2 f8
f8_ue4m3 f8_ue8m0 f6_e2m3 f6_e3m2 f4_e2m1 s2 u2 s4 u4 s6 u6 u1 bin1
""".split())

MEMBER_WORDS = frozenset("""
at chunkat subspan step view from span data copy async any zfill swiz swizzle transp pad fill
load store row col commit
""".split())


@dataclass(frozen=True, slots=True)   # slots: a source holds a few tokens per line
class Token:
    kind: str
    value: Any
    span: Span
    dtype: str | None = None  # numeric literals only
    # No blank before this token in the text it was scanned from (for a macro body's first
    # token and an argument's first token: no blank before the macro use or the parameter).
    # §4.3 reads it: '-' glued to a numeric literal is a negative literal.
    glued: bool = False

    def is_op(self, *texts: str) -> bool:
        return self.kind == OP and self.value in texts

    def is_kw(self, *words: str) -> bool:
        return self.kind == KEYWORD and self.value in words

    def describe(self) -> str:
        """How diagnostics quote this token: ``'['``, ``'by'``, ``end of input``."""
        if self.kind == EOF:
            return "end of input"
        if self.kind == STRING:
            return "a string"
        return f"'{self.value if self.kind not in (INT, FLOAT) else self.span_text}'"

    @property
    def span_text(self) -> str:
        return str(self.value)
