"""Property: any mutation of a valid program ends in a Module or in croqvm diagnostics --
never a Python exception and never an internal error (issue: front end, LANGUAGE.md §15.1).

Mutations work on the program's tokens (deletions, swaps, duplications) and on its bytes
(noise), and the whole pipeline up to the bytecode runs on the result.
"""
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import croqvm
from croqvm.core.errors import CompileError

PROGRAMS = sorted(p for p in (Path(__file__).resolve().parents[1] / "programs").rglob("*.co")
                  if "broken" not in p.parts)
SOURCES = [p.read_text() for p in PROGRAMS]

# Words, numbers, strings, comments and single punctuation: close enough to Croqtile's
# tokens for mutations to hit real syntax.
TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\w+(?:\.\w+)?|\s+|.', re.S)


def tokens(text):
    return TOKEN.findall(text)


def outcome(text):
    try:
        croqvm.compile(text, "fuzz.co")
    except CompileError as err:
        assert "internal error" not in str(err), str(err)
        assert "fuzz.co:" in str(err)      # every diagnostic has a position
        return "rejected"
    return "compiled"


@st.composite
def token_mutation(draw):
    toks = tokens(draw(st.sampled_from(SOURCES)))
    solid = [i for i, t in enumerate(toks) if not t.isspace()]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(solid))
        kind = draw(st.sampled_from(["delete", "swap", "duplicate"]))
        if kind == "delete":
            toks[i] = ""
        elif kind == "duplicate":
            toks[i] = toks[i] + " " + toks[i]
        else:
            j = draw(st.sampled_from(solid))
            toks[i], toks[j] = toks[j], toks[i]
    return "".join(toks)


@st.composite
def byte_noise(draw):
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        noise = draw(st.text(min_size=1, max_size=3))
        text = text[:at] + noise + text[at:]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(token_mutation())
def test_token_mutations_give_a_module_or_diagnostics(text):
    outcome(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(byte_noise())
def test_byte_noise_gives_a_module_or_diagnostics(text):
    outcome(text)


def test_truncated_programs_give_diagnostics():
    for text in SOURCES[:6]:
        for cut in range(0, len(text), max(1, len(text) // 40)):
            outcome(text[:cut])
