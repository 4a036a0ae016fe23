"""vLLM engines in Kubernetes manifests.

Every pod template of every resource is read: ``Pod``, ``Deployment``, ``StatefulSet``,
``ReplicaSet``, ``DaemonSet``, ``Job``, ``CronJob``, ``LeaderWorkerSet`` (leader and worker
templates; a ``vllm serve --headless`` worker is part of its leader's engine),
``DisaggregatedSet`` (one LeaderWorkerSet per role, the role's name its pods' role) and
any custom resource that holds a pod spec (a mapping with ``containers``).
A container is a vLLM engine when its command line starts a vLLM server
(``kvconfig.load.engines.server_start``), directly, in a ``sh -c``/``bash -c`` script
(``kvconfig.load.shell``), or as the ``args`` of a vLLM image's own entry point.

Kubernetes expands ``$(VAR)`` in ``command`` and ``args`` from the container's ``env``
before anything runs; kvconfig does the same with literal values. A variable set with
``valueFrom`` (or possibly by ``envFrom``) has a value only the cluster knows: the word
stays as written and the engine says so, unless the user gives that value (``--env``,
``Resource.given``). A ``$(VAR)`` that no variable defines reaches vLLM as that text,
which is an error.

``resources`` holds a resource and its pod specs, ``env`` a container's environment,
``containers`` the engine one container starts, ``workloads`` walks every pod template.
"""
