"""Values files of the Helm charts that start vLLM engines, read as their templates
render them.

**vLLM production-stack** (``helm/templates/deployment-vllm-multi.yaml`` and, for
``raySpec``, ``ray-cluster.yaml`` in vllm-project/production-stack): one Deployment per
``servingEngineSpec.modelSpec[]`` entry, whose ``vllm`` container runs
``vllm serve MODEL_URL --host 0.0.0.0 --port PORT`` followed by the flags of the
entry's ``vllmConfig`` keys (``enablePrefixCaching`` always emits
``--enable-prefix-caching`` or ``--no-enable-prefix-caching``), its ``extraArgs`` as
written, then ``--revision``, the LMCache ``--kv-transfer-config`` and the chat template.

**llm-d modelservice** (``templates/_helpers.tpl`` in llm-d-incubation/llm-d-modelservice):
the ``decode`` and ``prefill`` sections, each a list of ``containers``. A container's
``modelCommand`` decides its command line: ``vllmServe`` (``vllm serve MODEL``),
``imageDefault`` (the image's entry point with ``--model MODEL``) or ``custom`` (its own
``command`` and ``args``, the default). The chart adds ``--port``, the parallelism flags
from ``parallelism`` and ``--served-model-name``, then the container's ``args``.

**vLLM's own chart** (``examples/online_serving/chart-helm`` in vllm-project/vllm): one
Deployment whose ``vllm`` container runs ``image.command`` as written (``vllm_chart``).

**AI on EKS's inference chart** (``charts/inference-charts`` in awslabs/ai-on-eks-charts):
a values file merged over the chart's ``values.yaml``; framework ``vllm`` or ``aibrix``
renders a Deployment running ``vllm serve MODEL PARAMETERS``, ``lws-vllm`` a
LeaderWorkerSet whose leader runs the API server over a Ray cluster
(``inference_charts``).

**OPEA's vLLM chart** (``helm-charts/common/vllm`` in opea-project/GenAIInfra): its own
values, or the ``vllm``/``vllm-*`` sections of OPEA's application charts (merged with the
application chart's ``Chart.yaml`` aliases and ``values.yaml`` when beside the file): a
Deployment per running section (``opea``).

**The Semantic Router's Dynamo chart** (``deploy/kubernetes/dynamo/helm-chart`` in
vllm-project/semantic-router): a values file merged over the chart's ``values.yaml``,
rendered into the ``DynamoGraphDeployment`` of its template (a KV-routing frontend and a
``dynamo.vllm`` worker per ``workers`` entry), read as any Dynamo graph
(``semantic_router``).

Other charts: render them first (``helm template ... | kvconfig lint -``).

One module per chart (``production_stack``, ``llm_d``, ``vllm_chart``,
``inference_charts``, ``opea``, ``semantic_router``); how Go templates print values
(Helm's float64 numbers) in ``values``.
"""
