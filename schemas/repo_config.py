"""A repository's kvconfig settings: ``[tool.kvconfig]`` in ``pyproject.toml`` or a
``.kvconfig.toml`` (docs/inputs.md, "Repository configuration")."""

from __future__ import annotations

from pydantic import Field

from kvconfig.schemas._base import Strict


class RepoConfig(Strict):
    """Defaults for every ``kvconfig`` command run inside the repository; the command
    line's own options win."""

    platforms: list[str] = Field(default_factory=list)
    """GPUs to plan for when ``--platform`` is not given (``["H100", "H200"]``)."""
    model_paths: list[str] = Field(default_factory=list, alias="model-paths")
    """``PATTERN=DIR`` rules, as ``--model-path``; a relative DIR is relative to the
    configuration file's folder. The command line's rules come first."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment of the vLLM process, as ``--env``; ``--env`` wins per variable."""
    vllm_version: str | None = Field(default=None, alias="vllm-version")
    """vLLM release to plan for when ``--vllm-version`` is not given."""
