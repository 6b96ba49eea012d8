"""Writes docs/FAULTS.md, the runtime error catalogue, from croqvm.reports.messages (STYLE.md
house rule 1: generated, never edited; tests/test_messages.py regenerates it)::

    python -m croqvm.reports.messages_doc > docs/FAULTS.md
"""
from __future__ import annotations

from ..core.faults import Kind
from .messages import REPORTS, TEMPLATES

HEADER = """\
<!-- generated from croqvm/reports/messages.py by `python -m croqvm.reports.messages_doc`; do not edit -->
# Runtime errors: the catalogue

Every runtime error an engine reports is a record (docs/EXECUTION.md §14): a kind
below, identified by its number, and its operands in the order listed, each of the type
named after the colon (croqvm/reports/messages.py defines the types). The message is the
template with the operands written in. The report lines that follow come after a
message, and make up deadlock reports (docs/EXECUTION.md §18) and race reports (docs/EXECUTION.md §20).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _args(template) -> str:
    return ", ".join(f"`{n}:{t}`" for n, t in template.args) or "-"


def faults_markdown() -> str:
    lines = [HEADER, "## Kinds", "", "| # | kind | operands | message |", "|---|---|---|---|"]
    for kind in Kind:
        t = TEMPLATES[kind]
        lines.append(f"| {int(kind)} | `{kind.name}` | {_args(t)} | {_cell(t.text)} |")
    lines += ["", "## Report lines", "", "| name | operands | text |", "|---|---|---|"]
    for name, t in REPORTS.items():
        lines.append(f"| `{name}` | {_args(t)} | {_cell(t.text.strip())} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(faults_markdown(), end="")
