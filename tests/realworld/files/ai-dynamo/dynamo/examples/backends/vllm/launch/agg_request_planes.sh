#!/bin/bash
# SPDX-FileCopyrightText: Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0
set -e
trap 'echo Cleaning up...; kill 0' EXIT

# Parse command-line arguments for request plane mode
REQUEST_PLANE="tcp"  # Default to TCP

while [[ $# -gt 0 ]]; do
    case $1 in
        --tcp)
            REQUEST_PLANE="tcp"
            shift
            ;;
        --http)
            REQUEST_PLANE="http"
            shift
            ;;
        --nats)
            REQUEST_PLANE="nats"
            shift
            ;;
        -h|--help)
            echo "Usage: $0 [--tcp|--http|--nats]"
            echo "  --tcp   Use TCP request plane (default)"
            echo "  --http  Use HTTP/2 request plane"
            echo "  --nats  Use NATS request plane"
            exit 0
            ;;
        *)
            echo "Unknown option: $1"
            echo "Use --help for usage information"
            exit 1
            ;;
    esac
done

MODEL="Qwen/Qwen3-0.6B"
# --block-size 64 is required for XPU; on CUDA vLLM uses its default
if [[ "${DYN_DEVICE:-cuda}" == "xpu" ]]; then
    BLOCK_SIZE_ARG=(--block-size "${DYN_BLOCK_SIZE:-64}")
else
    BLOCK_SIZE_ARG=()
fi

# Set the request plane mode
export DYN_REQUEST_PLANE=$REQUEST_PLANE
echo "Using request plane mode: $REQUEST_PLANE"

HTTP_PORT="${DYN_HTTP_PORT:-8000}"
echo "=========================================="
echo "Launching Aggregated Serving + Request Planes (1 GPU)"
echo "=========================================="
echo "Model:       $MODEL"
echo "Frontend:    http://localhost:$HTTP_PORT"
echo "=========================================="
echo ""
echo "Example test command:"
echo ""
echo "  curl http://localhost:${HTTP_PORT}/v1/chat/completions \\"
echo "    -H 'Content-Type: application/json' \\"
echo "    -d '{"
echo "      \"model\": \"${MODEL}\","
echo "      \"messages\": [{\"role\": \"user\", \"content\": \"Explain why Roger Federer is considered one of the greatest tennis players of all time\"}],"
echo "      \"max_tokens\": 32"
echo "    }'"
echo ""
echo "=========================================="

# Frontend
# dynamo.frontend accepts either --http-port flag or DYN_HTTP_PORT env var (defaults to 8000)
python -m dynamo.frontend &

DYN_SYSTEM_PORT=${DYN_SYSTEM_PORT:-8081} \
DYN_HEALTH_CHECK_ENABLED=true \
    python -m dynamo.vllm --model "$MODEL" "${BLOCK_SIZE_ARG[@]}" --enforce-eager
