"""What vLLM's own start-up builds for each architecture's ``config.json``: the KV-cache
groups, their kinds and layer names (``kvconfig.engine``, an emulated GPU).

``python -m tools.registry.layouts CONFIGS OUT.json [--platform h100] [--jobs N]
[--only A,B]`` plans every ``CONFIGS/ARCH/config.json`` and writes
``{arch: plan JSON or error line}``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("configs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--platform", default="h100")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)

    from kvconfig import engine
    from kvconfig.load.platforms import parse_platform
    from tools.registry.rules import serve_file

    archs = sorted(p.name for p in args.configs.iterdir() if (p / "config.json").is_file())
    if args.only:
        wanted = set(args.only.split(","))
        archs = [a for a in archs if a in wanted]
    done = json.loads(args.out.read_text()) if args.out.exists() else {}
    archs = [a for a in archs if a not in done]
    with tempfile.TemporaryDirectory() as tmp:
        targets = []
        for arch in archs:
            serve = serve_file(args.configs / arch, Path(tmp) / f"{arch}.yaml", args.block_size)
            targets.append(engine.serve_config_target(str(serve), parse_platform(args.platform)))
        answers = engine.plans(targets, jobs=args.jobs, timeout=args.timeout)
    for arch, answer in zip(archs, answers, strict=True):
        done[arch] = str(answer) if isinstance(answer, Exception) else answer.to_json()
    args.out.write_text(json.dumps(done, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
