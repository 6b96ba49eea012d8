"""The generated files are what their sources give now (STYLE.md §1: a test regenerates
each and fails on any difference), and the C header compiles as C11 and C++17."""
import shutil
import subprocess

import pytest

from croqvm.bytecode import generate


@pytest.mark.parametrize("name", list(generate.OUTPUTS))
def test_generated_file_is_up_to_date(name):
    path = generate.ROOT / name
    assert path.is_file(), f"{name} is missing: run python -m croqvm.bytecode.generate"
    assert path.read_text(encoding="utf-8") == generate.OUTPUTS[name](), \
        f"{name} is out of date: run python -m croqvm.bytecode.generate"


@pytest.mark.parametrize("name", list(generate.OUTPUTS))
def test_generated_file_says_so_first(name):
    first = generate.OUTPUTS[name]().split("\n", 1)[0]
    assert "generated from croqvm/bytecode/" in first and "do not edit" in first


def test_check_mode_reports_nothing_when_up_to_date(capsys):
    assert generate.main(["--check"]) == 0
    assert capsys.readouterr().out == ""


PROGRAM = """#include "cq_opcodes.h"
#include <string.h>
int main(void) {
    /* the tables line up with the opcode enum and with each other */
    if (sizeof CQ_OP_NAME / sizeof CQ_OP_NAME[0] != CQ_NUM_OPCODES) return 1;
    if (strcmp(CQ_OP_NAME[CQ_OP_MMA_EXEC], "MMA_EXEC") != 0) return 2;
    size_t kinds = 0;    /* one letter per operand, '?' marking an optional one */
    for (const char *k = CQ_OPERAND_KINDS[CQ_OP_MMA_EXEC]; *k; k++) kinds += *k != '?';
    if (CQ_NUM_OPERANDS[CQ_OP_MMA_EXEC] != kinds) return 3;
    if (CQ_COLLECTIVE[CQ_OP_DMA] != CQ_MODE_WITH_SITE || CQ_SITE[CQ_OP_DMA] != 1) return 4;
    if (!(CQ_FLAGS[CQ_OP_ONCE] & CQ_FLAG_EFFECT_BLOCK) || CQ_WRITES[CQ_OP_LOAD] != 0) return 5;
    if (CQ_DTYPE_STORAGE_BYTES[CQ_DT_BF16] != 4 || CQ_STORAGE_LOCAL != 2) return 6;
    return 0;
}
"""


@pytest.mark.parametrize("compiler, flags", [("cc", ["-std=c11", "-x", "c"]),
                                             ("c++", ["-std=c++17", "-x", "c++"])])
def test_the_header_compiles_and_its_tables_agree(tmp_path, compiler, flags):
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler} on this machine")
    source = tmp_path / "main.c"
    source.write_text(PROGRAM)
    exe = tmp_path / "main"
    subprocess.run([compiler, *flags, "-Wall", "-Wextra", "-Werror", "-pedantic",
                    f"-I{generate.ROOT / 'native'}", str(source), "-o", str(exe)],
                   check=True, capture_output=True)
    assert subprocess.run([str(exe)]).returncode == 0
