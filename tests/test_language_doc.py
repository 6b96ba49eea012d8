"""docs/LANGUAGE.md cannot rot: its runnable examples run, its section numbers are the ones
the code cites, and it carries every croqvm decision.

A runnable example is an HTML comment ``<!-- example -->`` (or ``<!-- example: exit N -->``)
followed by two fenced blocks: the Croqtile source, then what a terminal shows. The second
block starts with the command line (``$ croqvm run NAME.co ...``); the source is saved under
the ``.co`` name the command gives, and everything the command writes to stdout and stderr,
in the order written, must equal the rest of the block. The exit status is 0 unless the
comment says otherwise. An example whose command is a ``croqvm run`` that any engine can do
runs once per engine (tests/engines.py).
"""
import io
import re
import shlex
import sys
from pathlib import Path

import pytest

from croqvm.cli.main import main
from engines import cli_options, runs_on_any_engine

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "LANGUAGE.md"
TEXT = DOC.read_text(encoding="utf-8")
MARKER = re.compile(r"^<!-- example(?:: exit (\d))? -->$")
FENCE = re.compile(r"^```")


def fenced_blocks_after(lines, start, count):
    """The first ``count`` fenced blocks after line index ``start``: (line number, text)."""
    blocks, i = [], start
    while len(blocks) < count:
        while not FENCE.match(lines[i]):
            i += 1
        first = i + 1
        i += 1
        while not FENCE.match(lines[i]):
            i += 1
        blocks.append((first + 1, "".join(line + "\n" for line in lines[first:i])))
        i += 1
    return blocks


def examples():
    lines = TEXT.splitlines()
    for n, line in enumerate(lines):
        m = MARKER.match(line)
        if m:
            (src_line, source), (_, shown) = fenced_blocks_after(lines, n, 2)
            yield pytest.param(source, shown, int(m.group(1) or 0), id=f"line {src_line}")


EXAMPLES = list(examples())


def test_the_reference_has_runnable_examples():
    assert len(EXAMPLES) >= 30
    assert TEXT.count("<!-- example") == len(EXAMPLES)


def command_of(shown: str) -> list:
    """The argv of the command line an example's output block starts with."""
    command = shown.partition("\n")[0]
    assert command.startswith("$ croqvm "), "the output block starts with the command"
    return shlex.split(command[len("$ croqvm "):])


def on_any_engine(yes: bool) -> list:
    """The examples whose command every engine can run, or the others."""
    return [p for p in EXAMPLES if runs_on_any_engine(command_of(p.values[1])) == yes]


def shows_what_the_doc_shows(source, shown, status, tmp_path, monkeypatch):
    argv = command_of(shown)
    expected = shown.partition("\n")[2]
    name = next(a for a in argv if a.endswith(".co"))
    (tmp_path / name).write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    terminal = io.StringIO()        # one stream, so stdout and stderr interleave as written
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(cli_options(argv))
    assert (terminal.getvalue(), code) == (expected, status)


@pytest.mark.parametrize("source, shown, status", on_any_engine(False))
def test_example(source, shown, status, tmp_path, monkeypatch):
    shows_what_the_doc_shows(source, shown, status, tmp_path, monkeypatch)


# examples whose run on cuda-cpu differs by design, and the test that shows how
DIFFER_ON_CUDA_CPU = {
    "diverge.co": "test_a_diverging_warp_prints_lane_by_lane_on_cuda_cpu",
    "tiles.co": "test_collective_operands_that_differ_are_not_checked_on_cuda_cpu",
}


@pytest.mark.parametrize("source, shown, status", on_any_engine(True))
def test_run_example_on_each_engine(source, shown, status, tmp_path, monkeypatch, engine):
    name = next(a for a in command_of(shown) if a.endswith(".co"))
    if engine == "cuda-cpu" and name in DIFFER_ON_CUDA_CPU:
        pytest.skip(f"differs on cuda-cpu by design: {DIFFER_ON_CUDA_CPU[name]}")
    shows_what_the_doc_shows(source, shown, status, tmp_path, monkeypatch)


# --------------------------------------------------------------------------- on cuda-cpu

def example_named(name: str):
    """The example whose command runs ``name`` (a ``.co`` file name)."""
    return next(p for p in EXAMPLES if name in command_of(p.values[1]))


def on_cuda_cpu(source, shown, tmp_path, monkeypatch):
    """What the example's command shows and its status with ``--device cuda-cpu``."""
    argv = command_of(shown)
    (tmp_path / next(a for a in argv if a.endswith(".co"))).write_text(source, "utf-8")
    monkeypatch.chdir(tmp_path)
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(argv + ["--device", "cuda-cpu"])
    return terminal.getvalue(), code


@pytest.mark.parametrize("name", ["half_barrier.co", "lockstep.co"])
def test_examples_that_cuda_cpu_once_ran_apart_agree(name, tmp_path, monkeypatch):
    """A block barrier some lanes pass by to the end of the kernel, and the turns of a
    cluster's blocks, are the engines' on cuda-cpu too (all examples: --engine cuda-cpu)."""
    source, shown, status = example_named(name).values
    expected = shown.partition("\n")[2]
    assert on_cuda_cpu(source, shown, tmp_path, monkeypatch) == (expected, status)


def test_a_diverging_warp_prints_lane_by_lane_on_cuda_cpu(tmp_path, monkeypatch):
    """docs/CUDA.md: a device prints a launch's lines in its own order; the CPU runtime
    runs each lane until it waits, so the lines of A.7 are the engines', lane by lane."""
    source, shown, status = example_named("diverge.co").values
    expected = shown.partition("\n")[2].splitlines(keepends=True)
    shows, code = on_cuda_cpu(source, shown, tmp_path, monkeypatch)
    got = shows.splitlines(keepends=True)
    assert code == status and sorted(got) == sorted(expected) and got != expected
    assert got[3:7] == ["even 0\n", "join 0\n", "odd 1\n", "join 1\n"]


def test_collective_operands_that_differ_are_not_checked_on_cuda_cpu(tmp_path, monkeypatch):
    """docs/CUDA.md: the generated code does not compare the operands of a collective's
    participants (§7.4.5), so the copy of §7.4's tiles.co runs on cuda-cpu."""
    source, shown, status = example_named("tiles.co").values
    assert status == 3
    assert on_cuda_cpu(source, shown, tmp_path, monkeypatch) == ("", 0)


# --------------------------------------------------------------------------- citations

HEADINGS = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", TEXT, re.M))


def items_of(section):
    """The item numbers of the numbered list of ``section`` (``"7.2"``, or ``"13"`` for a
    section without subsections)."""
    level = "###" if "." in section else "##"
    body = re.search(rf"^{level} {re.escape(section)}\.? .*?(?=^##)", TEXT, re.M | re.S).group(0)
    return set(re.findall(r"^(\d+)\. ", body, re.M))


OTHER_DOCUMENTS = re.compile(r"(?:EXECUTION|NUMERICS|CQB|OPCODES)\.md,? §[\d.]+|"
                             r"C11 §[\d.]+(?:-§[\d.]+)?")


def cited_sections():
    """Every section of this reference the repository cites: ``LANGUAGE.md §n.m`` anywhere,
    and a bare ``§n.m`` in code, tests and programs, where it means this document unless it
    names another one (``docs/EXECUTION.md §4``, ``C11 §6.5.13``)."""
    cited = set()
    for folder in ("croqvm", "tests", "programs", "bench", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".co", ".md") or path == DOC:
                continue
            text = path.read_text(encoding="utf-8")
            cited |= set(re.findall(r"LANGUAGE\.md,? §(\d+(?:\.\d+)*)", text))
            if path.suffix != ".md":
                cited |= set(re.findall(r"§(\d+(?:\.\d+)*)", OTHER_DOCUMENTS.sub("", text)))
    return sorted(cited)


@pytest.mark.parametrize("section", cited_sections())
def test_every_cited_section_exists(section):
    parts = section.split(".")
    if len(parts) == 2 and section not in HEADINGS:      # item m of a section without subsections
        parts = [parts[0], "", parts[1]]
    assert ".".join(p for p in parts[:2] if p) in HEADINGS
    if len(parts) == 3:
        assert parts[2] in items_of(".".join(p for p in parts[:2] if p))


def test_every_decision_is_listed_and_explained():
    decisions = re.search(r"^### 16\.1 .*?(?=^### )", TEXT, re.M | re.S).group(0)
    listed = re.findall(r"^- \*\*D(\d+)\*\*", decisions, re.M)
    assert len(listed) >= 20 and listed == [str(n) for n in range(1, len(listed) + 1)]
    for n in range(1, len(listed) + 1):   # each decision is also stated where its rule is
        assert len(re.findall(rf"\(D{n}\)", TEXT)) >= 1, f"D{n}"


def test_appendix_has_every_example():
    assert re.findall(r"^### (A\.\d+) ", TEXT, re.M) == [f"A.{n}" for n in range(1, 9)]
