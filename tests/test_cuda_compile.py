"""Building CUDA sources (croqvm/cuda/compile.py): the on-disk cache, its key, and the
errors when a compiler is missing or fails."""

import pytest

from croqvm.core import errors
from croqvm.cuda import compile as cc

KERNEL = """#include "croqvm_rt.cuh"
CQ_KERNEL void twice(int *x) { x[cq_lane()] *= 2; }
CQ_EXPORT(twice);
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CROQVM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CROQVM_DISABLE_CACHE", raising=False)
    return tmp_path / "cache"


def test_second_build_is_a_cache_hit(cache):
    log = []
    first = cc.build(KERNEL, cc.CPU, log=log.append)
    second = cc.build(KERNEL, cc.CPU, log=log.append)
    assert first == second and first.parent == cache
    assert "cache miss" in log[0] and "-DCQ_CPU" in log[0] and "-ffp-contract=off" in log[0]
    assert log[1] == f"croqvm: cuda cache hit {first}"


def test_entry_keeps_source_and_build_record(cache):
    binary = cc.build(KERNEL, cc.CPU, generator="emit 7")
    assert binary.with_suffix(".cu").read_text() == KERNEL
    info = cc.build_info(binary)
    assert info["target"] == "cpu" and info["generator"] == "emit 7"
    assert info["command"][0].endswith(("g++", "c++", "clang++")) and info["seconds"] > 0
    assert sorted(p.suffix for p in cache.iterdir()) == [".cu", ".json", ".so"]


@pytest.mark.parametrize("change", [
    {"source": KERNEL + "// another line\n"}, {"generator": "emit 8"}, {"flags": ("-DX=1",)},
])
def test_key_covers_source_generator_and_flags(cache, change):
    base = {"source": KERNEL, "generator": "emit 7", "flags": ()}
    one = cc.build(base["source"], cc.CPU, generator=base["generator"], flags=base["flags"])
    base.update(change)
    other = cc.build(base["source"], cc.CPU, generator=base["generator"], flags=base["flags"])
    assert one != other


def test_key_covers_the_runtime_headers(cache, monkeypatch):
    one = cc.cache_key(KERNEL, "cpu", "v", (), "")
    monkeypatch.setattr(cc, "runtime_hash", lambda: "another runtime")
    assert cc.cache_key(KERNEL, "cpu", "v", (), "") != one


def test_disabled_cache_builds_privately(cache, monkeypatch):
    monkeypatch.setenv("CROQVM_DISABLE_CACHE", "1")
    binary = cc.build(KERNEL, cc.CPU)
    assert binary.exists() and not cache.exists()


def test_default_cache_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("CROQVM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cc.cache_dir() == tmp_path / "croqvm" / "cuda-v1"


def test_missing_compiler_is_a_device_error(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.raises(errors.DeviceError,
                       match=r"a C\+\+ compiler is needed for target 'cpu' .*CXX is '/"):
        cc.build(KERNEL, cc.CPU)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(errors.DeviceError, match="nvcc is needed for target 'sm_80'.*CUDA toolkit"):
        cc.build(KERNEL, "sm_80")


def test_unknown_target_is_a_usage_error(cache):
    with pytest.raises(errors.ArgumentError, match="unknown CUDA target 'sm_75'"):
        cc.build(KERNEL, "sm_75")


def test_compiler_failure_is_an_internal_error_keeping_the_source(cache):
    broken = KERNEL.replace("*= 2", "*= undefined_name")
    with pytest.raises(errors.InternalError, match="failed on the CUDA source for cpu") as exc:
        cc.build(broken, cc.CPU)
    assert "undefined_name" in str(exc.value)
    kept = [p for p in cache.iterdir() if p.name.startswith("failed-")]
    assert len(kept) == 1 and kept[0].read_text() == broken
    assert not [p for p in cache.iterdir() if p.suffix in (".so", ".json")]


@pytest.mark.parametrize("target", [*cc.GPU_ARCHES, cc.PTX])
def test_nvcc_targets(cache, target):
    if not cc.shutil.which("nvcc"):
        pytest.skip("nvcc is not installed")
    binary = cc.build(KERNEL, target)
    head = binary.read_bytes()[:200]
    assert head.startswith(b"\x7fELF") if target != cc.PTX else b".version" in head
    assert "-fmad=false" in cc.build_info(binary)["command"]
