"""CPU step: pull the files the GPU proof needs out of the released wheels, into an ignored folder.

Nothing extracted here is committed: the output folder (``bench/gpu_proof/_carry/`` by default)
is git-ignored, and ``run.py`` unpacks it into a temporary directory on the GPU machine.

* From ``vllm-0.33.0-*.whl``: the pure-Python modules that vLLM's Triton attention kernel
  (``vllm/v1/attention/ops/triton_unified_attention.py``), its cache writer
  (``vllm/v1/attention/ops/triton_reshape_and_cache_flash.py``) and the KV-cache layout code
  (``vllm/v1/kv_cache_interface.py``) import, listed in ``VLLM_MODULES``, and the wheel's
  ``METADATA`` (vLLM reads its own version from it).  ``--discover PYTHON`` recomputes the module
  list with an interpreter that has vLLM installed and fails if it changed.
* From ``flashinfer_python-0.7.2.post1-*.whl`` (optional): the Python package, its metadata, and
  of its ``data/`` folder only what the JIT build of the paged attention module that vLLM's
  FlashInfer decode path uses on SM90 reads: the FlashInfer headers, the batch prefill/decode
  sources and templates, ``tvm_ffi_utils.h``, the vendored CCCL headers and spdlog.

Usage::

    python bench/gpu_proof/extract.py --vllm-wheel WHEEL [--flashinfer-wheel WHEEL] [--out DIR]

Writes ``vllm.zip``, ``flashinfer.zip`` and ``manifest.json`` (every wheel's and member's
SHA-256) into the output folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "_carry"

# The entry points; everything they import follows.
VLLM_ENTRY = (
    "vllm.v1.attention.ops.triton_unified_attention",
    "vllm.v1.attention.ops.triton_reshape_and_cache_flash",
    "vllm.v1.kv_cache_interface",
    "vllm.v1.kv_cache_layout",
)

# sys.modules after importing VLLM_ENTRY with vLLM 0.33.0 (see --discover).  Every one is plain
# Python; none needs vLLM's compiled extension.  ``vllm.platforms`` resolves the GPU platform
# lazily (``current_platform``); run.py sets it before anything asks (see run.py: StandInCuda).
VLLM_MODULES = (
    "vllm",
    "vllm._version",
    "vllm.distributed",
    "vllm.distributed.communication_op",
    "vllm.distributed.device_communicators",
    "vllm.distributed.device_communicators.base_device_communicator",
    "vllm.distributed.parallel_state",
    "vllm.distributed.utils",
    "vllm.env_override",
    "vllm.envs",
    "vllm.logger",
    "vllm.logging_utils",
    "vllm.logging_utils.formatter",
    "vllm.logging_utils.lazy",
    "vllm.logging_utils.log_time",
    "vllm.logging_utils.torch_tensor",
    "vllm.logging_utils.uvicorn_logging",
    "vllm.model_executor",
    "vllm.model_executor.layers",
    "vllm.model_executor.layers.quantization",
    "vllm.model_executor.layers.quantization.base_config",
    "vllm.model_executor.layers.quantization.utils",
    "vllm.model_executor.layers.quantization.utils.layer_utils",
    "vllm.model_executor.layers.quantization.utils.quant_utils",
    "vllm.model_executor.parameter",
    "vllm.model_executor.utils",
    "vllm.platforms",
    "vllm.platforms.interface",
    "vllm.plugins",
    "vllm.ray",
    "vllm.ray.lazy_utils",
    "vllm.scalar_type",
    "vllm.third_party",
    "vllm.third_party.pynvml",
    "vllm.triton_utils",
    "vllm.triton_utils.importing",
    "vllm.triton_utils.tensor_descriptor",
    "vllm.utils",
    "vllm.utils.import_utils",
    "vllm.utils.math_utils",
    "vllm.utils.network_utils",
    "vllm.utils.platform_utils",
    "vllm.utils.system_utils",
    "vllm.utils.torch_utils",
    "vllm.utils.torch_version",
    "vllm.v1",
    "vllm.v1.attention",
    "vllm.v1.attention.backends",
    "vllm.v1.attention.backends.registry",
    "vllm.v1.attention.ops",
    "vllm.v1.attention.ops.triton_attention_helpers",
    "vllm.v1.attention.ops.triton_reshape_and_cache_flash",
    "vllm.v1.attention.ops.triton_unified_attention",
    "vllm.v1.kv_cache_interface",
    "vllm.v1.kv_cache_layout",
    "vllm.v1.kv_cache_spec_registry",
    "vllm.version",
)

# Of flashinfer/data/, what the JIT build of the fa2 paged prefill module (which
# BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True) plans on SM90) and of the plain
# batch decode module read; the rest of data/ (262 MB of other kernels' sources, CUTLASS) stays.
FLASHINFER_DATA_PREFIXES = (
    "flashinfer/data/include/",
    "flashinfer/data/spdlog/include/",
    "flashinfer/data/cccl/cub/",
    "flashinfer/data/cccl/libcudacxx/include/",
    "flashinfer/data/cccl/thrust/",
    "flashinfer/data/csrc/batch_prefill",
    "flashinfer/data/csrc/batch_decode",
    "flashinfer/data/csrc/tvm_ffi_utils.h",
)

DISCOVER = """
import json, sys
for name in {entry!r}:
    __import__(name)
print(json.dumps(sorted(k for k in sys.modules if k == "vllm" or k.startswith("vllm."))))
"""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def module_paths(names: Iterable[str], members: set[str]) -> list[str]:
    """Each module's file inside the wheel: ``a/b.py`` or ``a/b/__init__.py``."""
    paths = []
    for name in names:
        base = name.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if candidate in members:
                paths.append(candidate)
                break
        else:
            raise SystemExit(f"{name}: no {base}.py or {base}/__init__.py in the wheel")
    return paths


def copy_members(
    wheel: Path, out_zip: Path, keep: Callable[[str], bool] | list[str]
) -> dict[str, str]:
    """Copy the chosen members of ``wheel`` into ``out_zip``; return name -> SHA-256."""
    digests: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out_zip, "w", zipfile.ZIP_DEFLATED) as dst:
        names = keep if isinstance(keep, list) else [n for n in src.namelist() if keep(n)]
        for name in names:
            data = src.read(name)
            digests[name] = hashlib.sha256(data).hexdigest()
            dst.writestr(name, data)
    return digests


def keep_flashinfer(name: str) -> bool:
    if name.endswith("/"):
        return False
    if name.startswith("flashinfer_python-") and ".dist-info/" in name:
        return not name.endswith("RECORD")
    if not name.startswith("flashinfer/"):
        return False
    if name.startswith("flashinfer/data/"):
        if name.count("/") == 2 and name.endswith(".py"):
            return True
        return name.startswith(FLASHINFER_DATA_PREFIXES)
    return True


def discover(python: str) -> list[str]:
    code = DISCOVER.format(entry=VLLM_ENTRY)
    proc = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--vllm-wheel", type=Path, required=True)
    parser.add_argument("--flashinfer-wheel", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--discover",
        metavar="PYTHON",
        help="an interpreter with vllm==0.33.0 installed: check VLLM_MODULES against it",
    )
    args = parser.parse_args(argv)

    if args.discover:
        found = discover(args.discover)
        if found != sorted(VLLM_MODULES):
            added = sorted(set(found) - set(VLLM_MODULES))
            gone = sorted(set(VLLM_MODULES) - set(found))
            print(f"VLLM_MODULES is out of date: add {added}, drop {gone}", file=sys.stderr)
            return 1
        print(f"VLLM_MODULES matches {args.discover} ({len(found)} modules)")

    args.out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, object] = {"entry": list(VLLM_ENTRY)}
    with zipfile.ZipFile(args.vllm_wheel) as wheel:
        members = set(wheel.namelist())
    # The distribution's METADATA too: vllm.platforms.vllm_version_matches_substr asks
    # importlib.metadata for vLLM's version while vllm.triton_utils probes Triton's drivers.
    metadata = [m for m in members if m.endswith(".dist-info/METADATA") and m.startswith("vllm-")]
    vllm_files = module_paths(VLLM_MODULES, members) + metadata
    manifest["vllm"] = {
        "wheel": args.vllm_wheel.name,
        "sha256": sha256(args.vllm_wheel),
        "files": copy_members(args.vllm_wheel, args.out / "vllm.zip", vllm_files),
    }
    if args.flashinfer_wheel is not None:
        files = copy_members(args.flashinfer_wheel, args.out / "flashinfer.zip", keep_flashinfer)
        manifest["flashinfer"] = {
            "wheel": args.flashinfer_wheel.name,
            "sha256": sha256(args.flashinfer_wheel),
            "members": len(files),
            "files_sha256": hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest(),
        }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    for name in ("vllm.zip", "flashinfer.zip"):
        path = args.out / name
        if path.exists():
            print(f"{path}: {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
