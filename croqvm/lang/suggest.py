"""Hints that lead from an error to its fix (LANGUAGE.md §15.1 ``hint:`` lines): the word a
misspelling probably meant, the Croqtile form of a CUDA or C habit, and the macro an
undefined upper-case name probably is.
"""
from __future__ import annotations

import difflib
import re

# CUDA's built-in names, and what Croqtile writes instead (the parallel levels of §6.2)
CUDA = {
    "threadIdx": "Croqtile has no built-in thread index: 'parallel t by N : thread' names it "
                 "(t), and 'p # t' combines it with a block index p",
    "blockIdx": "Croqtile has no built-in block index: 'parallel p by N : block' names it "
                "(p), and 'p # t' combines it with a thread index t",
    "blockDim": "Croqtile has no blockDim: '#t' is the number of instances of the parallel "
                "variable t",
    "gridDim": "Croqtile has no gridDim: '#p' is the number of instances of the parallel "
               "variable p",
    "__syncthreads": "the barrier of a block is the statement 'sync.shared;'",
    "printf": "Croqtile prints with 'print(a, b);' and 'println(a, b);'",
}
C_FOR = ("Croqtile has no C 'for' loop: write 'foreach i in [N] { ... }' for i from 0 to N-1, "
         "or a 'while' loop over a 'mutable int'")
# ALL_CAPS with a letter and two characters or more: a name a '#define' or -D gives
_MACRO_LIKE = re.compile(r"(?=.*[A-Z])[A-Z_][A-Z0-9_]+\Z")


def did_you_mean(word: str, candidates) -> str | None:
    """``did you mean 'parallel'?`` for the closest candidate, if one is close."""
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.75)
    return f"did you mean '{close[0]}'?" if close else None


def undeclared(name: str, visible) -> str | None:
    """The hint for an undeclared ``name``, given the names ``visible`` where it is used."""
    if name in CUDA:
        return CUDA[name]
    if _MACRO_LIKE.match(name):
        return (f"'{name}' looks like a macro: define it with '#define {name} ...' or on the "
                f"command line with -D {name}=VALUE")
    return did_you_mean(name, visible)
