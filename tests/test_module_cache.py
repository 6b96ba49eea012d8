"""The cache of compiled modules behind ``croqvm run`` (croqvm/cli/module_cache.py): a second
run of an unchanged source decodes the module kept by the first, with the same output and
warnings; any change to what compiling depends on, and any damage to an entry, means
compiling again."""
import os

import pytest

import croqvm
from croqvm.cli import module_cache
from croqvm.cli.main import main

# 7 + (3 & 1) in Croqtile, where '&' binds tighter than '+' (and a warning says so)
PROGRAM = """\
__co__ void show() {
  println("N =", N);
  println("7 + 3 & 1 =", 7 + 3 & 1);
}
"""
WARNING = "warning: '&' binds tighter than '+' in Croqtile (unlike C); add parentheses."


@pytest.fixture
def cache(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv("CROQVM_CACHE_DIR", str(where))
    monkeypatch.delenv("CROQVM_DISABLE_CACHE", raising=False)
    return where


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "show.co"
    path.write_text(PROGRAM)
    return path


def run(capsys, *args):
    """The exit status, stdout and stderr of ``croqvm run ARGS``."""
    status = main(["run", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def not_compiling(monkeypatch):
    """Make compiling fail, so that only a cache hit can run a program."""
    def refuse(*args, **kwargs):
        raise AssertionError("compiled although the cache holds the module")
    monkeypatch.setattr(croqvm, "compile", refuse)


def test_second_run_is_a_hit_with_the_same_output_and_warnings(cache, source, capsys,
                                                               monkeypatch):
    first = run(capsys, source, "-D", "N=3")
    assert first[0] == 0 and first[1] == "N = 3\n7 + 3 & 1 = 8\n"
    assert f"{source}:3:26: {WARNING}" in first[2]
    assert sorted(p.name.split(".", 1)[1] for p in cache.iterdir()) == ["cqb", "warnings.json"]
    not_compiling(monkeypatch)
    assert run(capsys, source, "-D", "N=3") == first


def test_disabled_cache_compiles_and_keeps_nothing(cache, source, capsys, monkeypatch):
    cached = run(capsys, source, "-D", "N=3")
    monkeypatch.setenv("CROQVM_DISABLE_CACHE", "1")
    for entry in cache.iterdir():
        entry.unlink()
    assert run(capsys, source, "-D", "N=3") == cached
    assert not list(cache.iterdir())


@pytest.mark.parametrize("change", ["source", "define", "file name"])
def test_a_change_compiles_again(cache, source, tmp_path, capsys, change):
    run(capsys, source, "-D", "N=3")
    if change == "source":
        source.write_text(PROGRAM.replace('"N ="', '"N is"'))
        expected = "N is 3\n"
    elif change == "define":
        expected = "N = 4\n"
    else:
        source = source.rename(tmp_path / "renamed.co")
        expected = "N = 3\n"
    status, out, err = run(capsys, source, "-D", "N=4" if change == "define" else "N=3")
    assert status == 0 and out.startswith(expected) and f"{source}:3:26: {WARNING}" in err
    assert len(list(cache.glob("*.cqb"))) == 2


@pytest.mark.parametrize("damage", [
    lambda entry: entry.with_suffix(".cqb").write_bytes(b"CQB\0 not a module"),
    lambda entry: entry.with_suffix(".cqb").write_bytes(
        entry.with_suffix(".cqb").read_bytes()[:-7]),
    lambda entry: entry.with_suffix(".warnings.json").write_text("[{\"severity\": "),
    lambda entry: entry.with_suffix(".warnings.json").write_text('[{"span": 3}]'),
    lambda entry: entry.with_suffix(".warnings.json").unlink(),
], ids=["not a module", "truncated", "warnings cut short", "warnings malformed",
        "warnings missing"])
def test_a_damaged_entry_is_compiled_again_and_rewritten(cache, source, capsys, monkeypatch,
                                                         damage):
    first = run(capsys, source, "-D", "N=3")
    (kept,) = cache.glob("*.cqb")
    entry = cache / kept.name[:-len(".cqb")]
    good = kept.read_bytes()
    damage(entry)
    assert run(capsys, source, "-D", "N=3") == first
    assert kept.read_bytes() == good
    not_compiling(monkeypatch)
    assert run(capsys, source, "-D", "N=3") == first


def test_a_cache_that_can_not_be_written_is_done_without(tmp_path, source, capsys,
                                                         monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("CROQVM_CACHE_DIR", str(blocked / "cache"))
    monkeypatch.delenv("CROQVM_DISABLE_CACHE", raising=False)
    status, out, _ = run(capsys, source, "-D", "N=3")
    assert status == 0 and out == "N = 3\n7 + 3 & 1 = 8\n"


def test_programs_with_errors_are_not_kept(cache, source, capsys):
    status, _, err = run(capsys, source)       # N undefined
    assert status == 1 and "error" in err
    assert not cache.exists() or not list(cache.iterdir())


def test_the_key_covers_every_file_of_the_croqvm_package():
    import croqvm
    root = os.path.dirname(croqvm.__file__)
    files = module_cache._croqvm_files()
    for part in ("__init__.py", "core/numerics.py", "bytecode/lower/dma.py",
                 "interp/engine.py", "cli/main.py"):
        assert os.path.join(root, part) + " " in files


def test_the_key_covers_croqvm_itself(tmp_path, monkeypatch):
    package = tmp_path / "croqvm"
    package.mkdir()
    (package / "stage.py").write_text("x = 1\n")
    monkeypatch.setattr(module_cache, "_PACKAGE", str(package))
    key = module_cache.entry_key(PROGRAM, "show.co", {"N": "3"})
    assert module_cache.entry_key(PROGRAM, "show.co", {"N": "3"}) == key
    (package / "stage.py").write_text("x = 22\n")
    assert module_cache.entry_key(PROGRAM, "show.co", {"N": "3"}) != key
    os.utime(package / "stage.py", ns=(1, 1))
    touched = module_cache.entry_key(PROGRAM, "show.co", {"N": "3"})
    os.utime(package / "stage.py", ns=(2, 2))
    assert module_cache.entry_key(PROGRAM, "show.co", {"N": "3"}) != touched


def test_a_cached_run_imports_neither_the_front_end_nor_pydantic(cache, source):
    """What start-up time a run of a small program takes is mostly imports: a cached run
    needs no front end, and the command's options no validation library."""
    import subprocess
    import sys
    script = ("import sys\nfrom croqvm.cli.main import main\n"
              f"status = main(['run', {str(source)!r}, '-D', 'N=3'])\n"
              "print(status, sorted(m for m in sys.modules\n"
              "                     if m.startswith(('croqvm.lang', 'pydantic'))))\n")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           cwd=os.path.dirname(os.path.dirname(croqvm.__file__)))
            for _ in range(2)]
    assert runs[0].stdout.splitlines()[-1].startswith("0 ['croqvm.lang")
    assert runs[1].stdout.splitlines()[-1] == "0 []"
