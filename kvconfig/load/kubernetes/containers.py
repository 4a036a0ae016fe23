"""The vLLM engine one container starts: its command line, shell script or image entry point,
with the pod's GPU labels and the container's GPU count."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvconfig.load.engine_fields import (
    check_words,
    gpu_fields,
    image_entry,
    image_version,
    is_vllm_image,
)
from kvconfig.load.gpu_labels import GPU_LABELS, INSTANCE_LABELS, instance_gpu
from kvconfig.load.kubernetes.env import container_env, expand_k8s
from kvconfig.load.kubernetes.resources import Found, Pod, strings, wrong_type
from kvconfig.load.operator_engine import Engine, Note, server_start


def _gpu_labels(spec: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(required GPU names, preferred GPU names) of a pod spec."""
    required: list[str] = []
    preferred: list[str] = []
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        for label in GPU_LABELS:
            value = selector.get(label)
            if isinstance(value, str) and value and _names_gpu(label, value):
                required.append(value)
                break
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if isinstance(node, dict):
        req = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        terms = req.get("nodeSelectorTerms") if isinstance(req, dict) else None
        for term in terms if isinstance(terms, list) else []:
            required.extend(_match_values(term))
        prefs = node.get("preferredDuringSchedulingIgnoredDuringExecution")
        for pref in prefs if isinstance(prefs, list) else []:
            if isinstance(pref, dict):
                preferred.extend(_match_values(pref.get("preference")))
    return required, preferred


def _match_values(term: Any) -> list[str]:
    out: list[str] = []
    if not isinstance(term, dict):
        return out
    exprs = term.get("matchExpressions")
    for expr in exprs if isinstance(exprs, list) else []:
        if (
            isinstance(expr, dict)
            and expr.get("key") in GPU_LABELS
            and expr.get("operator") == "In"
            and isinstance(expr.get("values"), list)
        ):
            out.extend(str(v) for v in expr["values"] if _names_gpu(expr["key"], str(v)))
    return out


def _names_gpu(label: str, value: str) -> bool:
    """Whether a node label's value names a GPU: always for the GPU-name labels; for an
    instance-type label only when the type is a GPU instance kvconfig knows."""
    if label not in INSTANCE_LABELS:
        return True
    return instance_gpu(value) is not None


def gpu_count(container: Mapping[str, Any]) -> int | None:
    """The GPUs a container asks for (``resources.limits``, else ``requests``)."""
    return _gpu_count(container)


def _gpu_count(container: Mapping[str, Any]) -> int | None:
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return None
    for part in ("limits", "requests"):
        block = resources.get(part)
        if isinstance(block, dict):
            for name in ("nvidia.com/gpu", "amd.com/gpu", "gpu"):
                value = block.get(name)
                if value is None:
                    continue
                try:
                    return int(str(value))
                except ValueError:
                    return None
    return None


def read_container(
    pod: Pod,
    index: int,
    base: Path,
    found: list[Found],
    *,
    implicit_entry: bool = False,
    env_base: Mapping[str, str] | None = None,
    env_unknown: Sequence[str] = (),
    entry_label: str | None = None,
    arg_unknown: Sequence[tuple[int, str]] = (),
) -> list[Engine]:
    """The vLLM engines one container starts: none, one, or one per server its script
    starts in the background. ``arg_unknown``: (index in command + args, what is unknown
    there) for words a caller already knows to be unknown."""
    res = pod.resource
    cpath = (*pod.path, pod.listed, index)
    container = pod.spec[pod.listed][index]
    if not isinstance(container, dict):
        return []
    cname = str(container.get("name") or f"containers[{index}]")
    name = f"{pod.name}/{cname}"
    line = res.line(*cpath)
    image = container.get("image") if isinstance(container.get("image"), str) else None
    command = strings(container.get("command"), res, (*cpath, "command"), name)
    args = strings(container.get("args"), res, (*cpath, "args"), name)
    entry_point = image_entry(image) if not command and not is_vllm_image(image) else None
    if entry_point is not None:  # args on an image whose entry point starts vLLM
        command = list(entry_point)
    env = container_env(container, res, cpath, name, env_base)
    given = getattr(res, "given", {})
    for extra in env_unknown:  # set by a controller (LWS_LEADER_ADDRESS): the cluster's too
        if extra in given:
            env.known[extra] = given[extra]
        elif extra not in env.unknown:
            env.unknown.append(extra)
    words = command + args
    places = [(*cpath, "command", i) for i in range(len(command))] + [
        (*cpath, "args", i) for i in range(len(args))
    ]
    expanded: list[str] = []
    left: list[tuple[int, str, str]] = []
    for i, w in enumerate(words):
        text, refs = expand_k8s(w, env)
        expanded.append(text)
        left.extend((i, n, why) for n, why in refs)
    vllm_image = is_vllm_image(image)
    starts: list[
        tuple[str, str, list[str], Mapping[str, str | None], list[tuple[int, str]], int | None]
    ]
    starts = []
    from kvconfig.load.shell.wrappers import shell_script

    detected = shell_script(expanded)
    when: tuple[str, ...] = ()
    if detected is not None:
        shell_at, dialect = detected
        script = expanded[shell_at]
        item_line = res.line(*places[shell_at])
        script_line = (
            item_line + 1 if item_line is not None and item_line in pod.block_lines else item_line
        )
        from kvconfig.load.kubernetes.volumes import held_files
        from kvconfig.load.shell import servers
        from kvconfig.load.shell.script import commands

        positional = expanded[shell_at + 1 :]
        cmds = commands(
            script,
            env.shell_env(),
            positional,
            unknown_rest=bool(env.sources),
            source=res.source,
            line=script_line,
            key=name,
            dialect=dialect,
            held=held_files(res, pod.spec, container),
        )
        chosen, problem = servers(cmds, lambda c: server_start(c.words) is not None)
        if problem:
            raise res.err(
                f"{problem}; kvconfig cannot tell which one runs",
                cpath,
                name,
                "run each vLLM server in its own container, or keep one command",
            )
        for cmd in chosen:
            start = server_start(cmd.words)
            assert start is not None
            offset = len(cmd.words) - len(start[2])
            unknown_here = [(i - offset, w) for i, w in cmd.unknown if i >= offset]
            starts.append((*start, cmd.env, unknown_here, cmd.line))
            when = cmd.when
        runs = "a shell script"
    else:
        from kvconfig.load.shell.wrappers import unwrap

        inner, _, _, removed = unwrap(expanded)
        if inner is not None and removed and server_start(inner) is not None:
            expanded, places = expanded[removed:], places[removed:]
            left = [(i - removed, n, why) for i, n, why in left if i >= removed]
            arg_unknown = [(i - removed, w) for i, w in arg_unknown if i >= removed]
        start = server_start(expanded) if command or not (vllm_image or implicit_entry) else None
        if start is None and not command and (vllm_image or implicit_entry):
            start = ("image entry point", "serve", expanded)
            if expanded[:1] == ["serve"]:
                raise res.err(
                    "args start with 'serve', but the image already runs 'vllm serve': vLLM "
                    "would stop with 'unrecognized arguments'",
                    places[0] if places else cpath,
                    name,
                    "leave 'serve' out of args, or set command: [vllm, serve]",
                )
        if start is not None:
            undefined = [(i, n) for i, n, why in left if why == "undefined"]
            if undefined:
                i, var = undefined[0]
                given = (
                    " (--env does not reach it: Kubernetes expands only the container's own env)"
                )
                raise res.err(
                    f"$({var}) is not defined in the container's env: Kubernetes passes the "
                    f"text '$({var})' to vLLM unchanged"
                    + (given if var in getattr(res, "given", {}) else ""),
                    places[i],
                    name,
                    f"define {var} under env, or write the value",
                )
            offset = len(expanded) - len(start[2])
            unknown = [(i - offset, f"$({n})") for i, n, _ in left if i >= offset]
            unknown += [(i - offset, what) for i, what in arg_unknown if i >= offset]
            starts.append((*start, env.shell_env(), unknown, line))
        shown = expanded[:3] if expanded[1:2] == ["-m"] else expanded[:2]
        runs = " ".join(shown) if expanded else f"the image {image or '?'}'s entry point"
    if not starts:
        found.append(Found(name, runs, line))
        return []
    if not image and _validated(res):
        raise res.err(
            "the container has no image, which the API server refuses (containers[].image: "
            "Required value): no pod runs it; a kustomize patch is applied by its "
            "kustomization",
            cpath,
            name,
            "give the image, or lint the kustomization that applies this patch",
        )
    if len(starts) > 1:
        engines: list[Engine] = []
        for k, one in enumerate(starts):
            engines += _engine(pod, index, base, [one], f"{name}#{k + 1}", env, when, entry_label)
        return engines
    return _engine(pod, index, base, starts, name, env, when, entry_label)


_VALIDATED = {
    "v1": {"Pod", "ReplicationController"},
    "apps/v1": {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"},
    "batch/v1": {"Job", "CronJob"},
}
"""Core kinds whose pod templates the API server validates (``ValidateContainers``: a
container's ``image`` is required); an operator's resource gets its image from the
operator (a Dynamo graph, KServe's runtimes), so it is left alone."""


def _validated(res: Any) -> bool:
    data = res.data if isinstance(res.data, dict) else {}
    return str(data.get("kind")) in _VALIDATED.get(str(data.get("apiVersion")), set())


def _engine(  # noqa: PLR0917 (the container's facts)
    pod: Pod,
    index: int,
    base: Path,
    starts: list[
        tuple[str, str, list[str], Mapping[str, str | None], list[tuple[int, str]], int | None]
    ],
    name: str,
    env: Any,
    when: tuple[str, ...],
    entry_label: str | None,
) -> list[Engine]:
    res = pod.resource
    cpath = (*pod.path, pod.listed, index)
    container = pod.spec[pod.listed][index]
    line = res.line(*cpath)
    image = container.get("image") if isinstance(container.get("image"), str) else None
    entry, parser, argv, run_env, unknown, at = starts[0]
    check_words(argv, res.source, at, name)
    notes: list[Note] = [
        Note("run-time-branch", f"this vLLM command runs only on {w}", at, "")
        for w in when
        if not w.startswith("the status of")
    ]
    for i, what in unknown:
        option = argv[i - 1] if 0 < i <= len(argv) and argv[i - 1].startswith("-") else ""
        notes.append(
            Note(
                "unknown-value",
                f"{what} in argument {i + 1} of vLLM is only known at run time",
                at,
                option or ("model" if i == 0 else ""),
            )
        )
    role = pod.role
    defaults: dict[str, Any] = {}
    if entry == "dynamo.vllm":
        from kvconfig.load import dynamo_args

        split = dynamo_args.split_args(argv, at, res.source, image)
        argv, notes, defaults = split.argv, [*notes, *split.notes], split.defaults
        role = split.role or role
    version, vnotes = image_version(image, res.line(*cpath, "image") or line)
    notes.extend(vnotes)
    selector = pod.spec.get("nodeSelector")
    if selector is not None and not isinstance(selector, dict):  # a map of labels
        hint = (
            "write node labels, e.g. nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}"
        )
        raise wrong_type(
            res, selector, (*pod.path, "nodeSelector"), "a mapping of node labels", hint
        )
    required, preferred = _gpu_labels(pod.spec)
    labels = [*required, *pod.extra_gpu]
    gpu, platforms, gnotes = gpu_fields(labels, res.line(*pod.path) or line)
    notes.extend(gnotes)
    if not labels and preferred:
        notes.append(
            Note(
                "preferred-gpu",
                f"the pod prefers {', '.join(preferred)} but does not require it; kvconfig "
                "reads only required node affinity",
                res.line(*pod.path, "affinity"),
                "affinity",
            )
        )
    known_env = {k: v for k, v in run_env.items() if v is not None}
    unknown_env = sorted({k for k, v in run_env.items() if v is None} | set(env.unknown))
    parallelism = dict(pod.parallelism)
    gpus = _gpu_count(container)
    if gpus is not None:
        parallelism["gpus"] = gpus
    return [
        Engine(
            name=name,
            source=res.source,
            line=at or line,
            argv=tuple(argv),
            entry=entry_label or entry,
            parser=parser,
            env=known_env,
            env_unknown=tuple(unknown_env),
            env_from=tuple(env.sources),
            gpu=gpu,
            platforms=platforms,
            vllm_version=version,
            image=image,
            role=role,
            parallelism=parallelism,
            defaults=defaults,
            base=str(base),
            notes=tuple(notes),
        )
    ]


def native_sidecars(
    pod: Pod,
    base: Path,
    found: list[Found],
    env_base: Mapping[str, str],
    env_unknown: Sequence[str],
) -> list[Engine]:
    """The engines of a pod's native sidecars: ``initContainers`` with ``restartPolicy:
    Always`` run beside its containers for the pod's life (the kubelet starts them in
    order and does not wait for them to end); other init containers end before the pod's
    containers start, so they serve nothing."""
    listed = pod.spec.get("initContainers")
    if not isinstance(listed, list):
        return []
    sidecars = dataclasses.replace(pod, listed="initContainers")
    out: list[Engine] = []
    for i, container in enumerate(listed):
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            out += read_container(
                sidecars, i, base, found, env_base=env_base, env_unknown=env_unknown
            )
    return out
