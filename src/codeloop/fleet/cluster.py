"""Connecting this process to a Ray cluster, or starting a local one for `auto`."""

from __future__ import annotations

import importlib
import os
import secrets
import socket
from types import ModuleType

from codeloop.errors import FleetError

# Named actors live in a namespace: a restarted server finds the sessions its predecessor placed.
NAMESPACE = "codeloop"
INSTALL_HINT = "install the extra: pip install 'codeloop[fleet]'"


def ray_module() -> ModuleType:
    """The `ray` package, or a FleetError saying how to install it (it is an optional extra)."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise FleetError(f"--ray needs the Ray package, which is not installed ({exc})",
                         hint=INSTALL_HINT) from exc


def connect(address: str) -> None:
    """Join the cluster at `address` (host:port or ray://…); 'auto' starts a private local one.

    Connecting twice is a no-op, so the server and the evaluation runner can both call it."""
    ray = ray_module()
    if ray.is_initialized():
        return
    address = address.strip()
    if not address:
        raise FleetError("--ray needs an address", hint="pass host:port of the head node, or auto")
    # Ray's own 'auto' means "a cluster already running on this machine", which could be anyone's;
    # ours starts a fresh one owned by this process.
    target = "local" if address == "auto" else address
    if target == "local":
        _private_token()
    if target != "local" and "://" not in target:
        _probe(target)
    _reload_auth(ray)
    try:
        ray.init(address=target, namespace=NAMESPACE, include_dashboard=False,
                 configure_logging=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise FleetError(f"cannot connect to the Ray cluster at {address}: {exc}",
                         hint="check the head node is running (ray status) and the address "
                              "is its GCS host:port, or use --ray auto") from exc


def _private_token() -> None:
    """Give a local cluster a fresh token unless the operator chose one.

    Ray would otherwise write a token to ~/.ray/auth_token, where every later `ray start` on
    the machine picks it up; an in-memory token (inherited by the nodes we start) leaves no
    trace and still keeps other local users out."""
    if "RAY_AUTH_MODE" in os.environ or "RAY_AUTH_TOKEN" in os.environ:
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def _reload_auth(ray: ModuleType) -> None:
    """Make Ray see RAY_AUTH_MODE / RAY_AUTH_TOKEN set after it was imported.

    Ray reads them into its config once, at import; a server imports Ray long before the
    operator's (or `_private_token`'s) variables matter. Ray's own token setup re-reads the
    config the same way."""
    if "RAY_AUTH_MODE" not in os.environ:
        return
    raylet = ray._raylet
    raylet.Config.initialize("")
    raylet.AuthenticationTokenLoader.instance().reset_cache()


def _probe(address: str, timeout: float = 3.0) -> None:
    """Fail fast when nothing listens at host:port: Ray itself retries for minutes, then exits."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise FleetError(f"--ray {address!r} is not host:port",
                         hint="pass the head node's GCS address, e.g. 10.0.0.5:6379, or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise FleetError(f"cannot connect to the Ray cluster at {address}: {exc}",
                         hint="check the head node is running (ray status) and the address "
                              "is its GCS host:port, or use --ray auto") from exc


def connected() -> bool:
    """Whether this process has joined a Ray cluster."""
    try:
        return bool(importlib.import_module("ray").is_initialized())
    except ImportError:
        return False


def disconnect() -> None:
    """Leave the cluster (and stop it, when `connect('auto')` started it here)."""
    if connected():
        ray_module().shutdown()
