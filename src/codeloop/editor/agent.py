"""codeloop as an Agent Client Protocol agent: an editor's session is a codeloop session on
the editor's working directory; each prompt runs the loop until it finishes, pauses or is
cancelled, streaming the log as session updates."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION
from acp.exceptions import RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    TextResourceContents,
)

from codeloop import __version__
from codeloop.config import Settings, load_settings
from codeloop.editor.bridge import EditorBridge
from codeloop.editor.updates import Update, UpdateMapper, replay
from codeloop.errors import CodeloopError
from codeloop.events import StoredEvent, UserMessage
from codeloop.llm.factory import check_endpoint, pinned_endpoint
from codeloop.llm.roles import main_choice, make_role_models, make_router, settings_for
from codeloop.llm.types import StreamDelta
from codeloop.session.cleanup import end_run
from codeloop.session.control import Control
from codeloop.session.resume import session_settings, with_overrides
from codeloop.session.setup import (
    RuntimeParts,
    build_runner,
    check_repo,
    new_session_id,
    start_session,
)
from codeloop.session.state import SessionState, fold
from codeloop.session.store import EventStore
from codeloop.tools.buffers import EDITOR_BUFFERS

MODES = [
    SessionMode(id="ask", name="Ask", description="Ask before every edit and command"),
    SessionMode(id="auto-edit", name="Auto-edit",
                description="Edit without asking; ask before commands"),
    SessionMode(id="full-auto", name="Full auto",
                description="Edit and run commands in the sandbox without asking"),
]
STOP_REASONS: dict[str, Any] = {"budget_exceeded": "max_turn_requests",
                                "context_overflow": "max_tokens", "stopped": "cancelled",
                                "cancelled": "cancelled"}


@dataclass
class EditorSession:
    """One editor session; its id is the codeloop session's, which exists from the first
    prompt (`started`)."""

    cwd: Path
    mode: str
    started: bool = False
    control: Control = field(default_factory=Control)


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's text, with embedded files and links the editor attached as context."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResourceContentBlock) and \
                isinstance(block.resource, TextResourceContents):
            parts.append(f"Attached {block.resource.uri}:\n```\n{block.resource.text}\n```")
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"(see {block.uri})")
    return "\n\n".join(p for p in parts if p.strip())


class CodeloopAgent:
    """The ACP agent; `store` is the event store the sessions are logged in."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.conn: Client | None = None
        self.can_read = False
        self.sessions: dict[str, EditorSession] = {}

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int,
                         client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None,
                         **kwargs: Any) -> InitializeResponse:
        fs = client_capabilities.fs if client_capabilities else None
        self.can_read = bool(fs and fs.read_text_file)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(embedded_context=True)),
            agent_info=Implementation(name="codeloop", title="codeloop", version=__version__))

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        return AuthenticateResponse()

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> NewSessionResponse:
        try:
            repo = check_repo(Path(cwd))
            mode = load_settings(repo).approval_mode
        except CodeloopError as exc:
            raise RequestError.invalid_params({"message": exc.message, "hint": exc.hint}) from exc
        sid = new_session_id()
        self.sessions[sid] = EditorSession(repo.resolve(), mode)
        return NewSessionResponse(session_id=sid, modes=SessionModeState(
            current_mode_id=mode, available_modes=MODES))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse | None:
        """An earlier codeloop session, its conversation replayed as updates; the next
        prompt continues it."""
        try:
            row = self.store.get(session_id)
            events = self.store.read(row.id)
            mode = str(session_settings(fold(events)).approval_mode)
        except CodeloopError as exc:
            raise RequestError.invalid_params({"message": exc.message, "hint": exc.hint}) from exc
        self.sessions[row.id] = EditorSession(Path(row.repo), mode, started=True)
        assert self.conn is not None
        for update in replay(Path(row.repo), events):
            await self.conn.session_update(session_id=row.id, update=update)
        return LoadSessionResponse(modes=SessionModeState(current_mode_id=mode,
                                                          available_modes=MODES))

    async def set_session_mode(self, session_id: str, mode_id: str,
                               **kwargs: Any) -> SetSessionModeResponse | None:
        if mode_id not in {m.id for m in MODES}:
            raise RequestError.invalid_params({"mode_id": mode_id})
        self._session(session_id).mode = mode_id
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Pause the running loop at its next step; the next prompt continues the session."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.control.pause.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"message": "the prompt has no text"})
        session.control = Control()
        loop = asyncio.get_running_loop()
        try:
            state = await asyncio.to_thread(self._run, session_id, session, text, loop)
        except CodeloopError as exc:
            raise RequestError.internal_error({"message": exc.message, "hint": exc.hint}) from exc
        if session.control.pause.is_set():
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason=STOP_REASONS.get(state.status, "end_turn"))

    def shutdown(self) -> None:
        """The editor went away: every running loop pauses at its next step (resumable with
        `codeloop resume ID`)."""
        for session in self.sessions.values():
            session.control.pause.set()

    def _session(self, session_id: str) -> EditorSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"no session {session_id}"})
        return session

    def _settings(self, sid: str, session: EditorSession, text: str) -> Settings:
        """The settings for this prompt; the first starts the codeloop session."""
        if not session.started:
            settings = load_settings(session.cwd, {"approval_mode": session.mode})
            settings = pinned_endpoint(main_choice(settings).model, settings)
            main = main_choice(settings)
            check_endpoint(main.model, settings_for(main, settings))
            start_session(self.store, text, session.cwd, settings, main.model, session_id=sid)
            session.started = True
            return settings
        state = fold(self.store.read(sid))
        settings, override = with_overrides(state, {"approval_mode": session.mode},
                                            load_settings(session.cwd).api_key)
        settings = settings.model_copy(update={"model": settings.model or
                                               self.store.get(sid).model})
        events: list[Any] = [override] if override is not None else []
        events.append(UserMessage(text=text, source="editor", reopens=True))
        self.store.append(sid, events)
        return settings

    def _run(self, sid: str, session: EditorSession, text: str,
             loop: asyncio.AbstractEventLoop) -> SessionState:
        """Run the loop in this (worker) thread; updates and questions go to the editor."""
        assert self.conn is not None
        conn = self.conn
        settings = self._settings(sid, session, text)
        bridge = EditorBridge(conn, loop, sid, self.can_read)
        mapper = UpdateMapper(session.cwd)
        # The editor shows its own prompt: the updates start with what the loop does next.
        mapper.state = fold(self.store.read(sid))

        def send(updates: list[Update]) -> None:
            for update in updates:
                bridge.call(conn.session_update(session_id=sid, update=update), 30)

        def on_event(stored: StoredEvent) -> None:
            send(mapper.on_event(stored))

        def on_delta(delta: StreamDelta) -> None:
            send(mapper.on_delta(delta))

        models = make_role_models(settings)
        runner = build_runner(self.store, sid, session.cwd, settings, models.primary("coder"),
                              parts=RuntimeParts(control=session.control, approver=bridge.approve),
                              on_event=on_event, on_delta=on_delta,
                              router=make_router(settings, models))
        bridge.context = runner.ctx
        mapper.workspace = runner.ctx.workspace
        runner.ctx.services[EDITOR_BUFFERS] = bridge.take_buffer
        try:
            return runner.run()
        finally:
            end_run(runner.ctx)
