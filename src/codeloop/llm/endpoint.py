"""Checking a model server's address before a session depends on it: its form at once, then
one short request, so a typo or a server that is down costs seconds, not a session."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from codeloop.errors import ConfigError

PROBE_TIMEOUT_S = 2.0
URL_HINT = "give the server's http(s) address, e.g. --base-url http://localhost:11434/v1"


class EndpointUnreachable(ConfigError):
    """The model server did not answer, or refused the key, when probed."""


def checked_base_url(url: str) -> str:
    """The URL if it is an http(s) address with a host; else a `ConfigError` saying so."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        raise ConfigError(f"base URL {url!r} is not a valid URL: {exc}", URL_HINT) from exc
    if parts.scheme not in ("http", "https"):
        what = f"its scheme is {parts.scheme!r}" if parts.scheme else "it has no http:// or https://"
        raise ConfigError(f"base URL {url!r} is not an http(s) URL: {what}", URL_HINT)
    if not parts.hostname:
        raise ConfigError(f"base URL {url!r} names no host", URL_HINT)
    return url


def probe(base_url: str, path: str = "", headers: dict[str, str] | None = None,
          timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """One GET of `base_url + path`: any HTTP answer but 401/403 means the server is there.

    Only a failure to connect (refused, no such host, no answer in time) or a refused key
    stops the session; a slow or odd answer is left to the model call itself."""
    url = base_url.rstrip("/") + path
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectTimeout):
            reason = f"no answer within {timeout_s:g} s"
        raise EndpointUnreachable(f"cannot reach the model server at {base_url}: {reason}",
                                  "start the server, or check --base-url") from exc
    except httpx.HTTPError:
        return  # it answered, if badly: the model call reports what is wrong in detail
    if response.status_code in (401, 403):
        raise EndpointUnreachable(
            f"the model server at {base_url} refused the API key (HTTP {response.status_code})",
            "set OPENAI_API_KEY (or CODELOOP_API_KEY / api_key in the config) to a valid key")
