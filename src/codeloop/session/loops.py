"""Loop detection over the actions since the last corrective nudge."""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.session.state import SessionState

SAME_ACTION_SAME_RESULT = 4
SAME_FAILING_ACTION = 3
ALTERNATION_SPAN = 6
NO_ACTION_TURNS = 3
MALFORMED_IN_A_ROW = 3


@dataclass(frozen=True)
class LoopFinding:
    pattern: str
    detail: str

    def nudge_text(self) -> str:
        return (
            f"You seem to be stuck ({self.detail}). Step back: re-read the task, try a different "
            "approach, or call finish and explain what blocks you. Repeating it will end the "
            "session."
        )


def detect_loop(state: SessionState) -> LoopFinding | None:
    """The first loop pattern the recent actions show, if any."""
    recent = state.actions[state.actions_at_last_nudge:]
    keys = [(a.signature, a.observation) for a in recent]
    if len(keys) >= SAME_ACTION_SAME_RESULT and len(set(keys[-SAME_ACTION_SAME_RESULT:])) == 1:
        return LoopFinding("repeat", f"the same action gave the same result "
                                     f"{SAME_ACTION_SAME_RESULT} times")
    tail = recent[-SAME_FAILING_ACTION:]
    if (len(tail) == SAME_FAILING_ACTION and all(not a.ok for a in tail)
            and len({a.signature for a in tail}) == 1 and not tail[0].malformed):
        return LoopFinding("repeat_failure", f"the same action failed {SAME_FAILING_ACTION} "
                                             "times in a row")
    span = keys[-ALTERNATION_SPAN:]
    if (len(span) == ALTERNATION_SPAN and span[0] != span[1]
            and all(span[i] == span[i % 2] for i in range(ALTERNATION_SPAN))):
        return LoopFinding("alternation", "two actions alternating back and forth")
    if state.no_action_turns >= NO_ACTION_TURNS:
        return LoopFinding("no_action", f"{state.no_action_turns} replies without a tool call")
    mal = recent[-MALFORMED_IN_A_ROW:]
    if len(mal) == MALFORMED_IN_A_ROW and all(a.malformed for a in mal):
        return LoopFinding("malformed", f"{MALFORMED_IN_A_ROW} malformed tool calls in a row")
    return None
