"""A local stand-in for the Hugging Face Hub's file endpoints, on 127.0.0.1.

``huggingface_hub.hf_hub_download`` calls ``HEAD`` then ``GET`` on
``{endpoint}/{repo_id}/resolve/{revision}/{filename}`` and needs the ``ETag`` and
``X-Repo-Commit`` headers; errors carry ``X-Error-Code`` (``RepoNotFound``,
``GatedRepo``, ``RevisionNotFound``, ``EntryNotFound``) as the Hub sends them. Nothing
here reaches the network.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote


@dataclass
class Repo:
    """A repository: its files per revision, and how it answers."""

    files: Mapping[str, Mapping[str, bytes]]
    gated: bool = False
    private: bool = False
    delay: float = 0.0


@dataclass
class Hub:
    """The repositories served, and the requests seen."""

    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)


def commit_of(revision: str) -> str:
    return hashlib.sha1(revision.encode()).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    hub: Hub

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _answer(self, body: bool) -> None:
        self.hub.requests.append((self.command, self.path, self.headers.get("authorization")))
        parts = unquote(self.path.split("?", 1)[0]).strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return self._error(404, "RepoNotFound")
        repo_id, revision, filename = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
        repo = self.hub.repos.get(repo_id)
        if repo is not None and repo.delay:
            time.sleep(repo.delay)
        if repo is None:
            return self._error(401, "RepoNotFound")
        if repo.gated and not self.headers.get("authorization"):
            return self._error(401, "GatedRepo")
        if repo.private and not self.headers.get("authorization"):
            return self._error(401, "RepoNotFound")
        files = repo.files.get(revision)
        if files is None:
            return self._error(404, "RevisionNotFound")
        data = files.get(filename)
        if data is None:
            return self._error(404, "EntryNotFound", commit_of(revision))
        self.send_response(200)
        self.send_header("ETag", '"' + hashlib.sha1(data).hexdigest() + '"')
        self.send_header("X-Repo-Commit", commit_of(revision))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _error(self, status: int, code: str, commit: str | None = None) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", code)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._answer(False)

    def do_GET(self) -> None:
        self._answer(True)


@contextmanager
def serve(hub: Hub) -> Iterator[str]:
    """Serve ``hub`` on a free port of 127.0.0.1; yields the endpoint URL."""
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def config_bytes(path: str) -> bytes:
    """A model folder's config.json."""
    with open(path, "rb") as f:
        data = f.read()
    json.loads(data)
    return data
