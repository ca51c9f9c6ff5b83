"""Run Aider's repo map for the localize benchmark; executed by the Python of Aider's own venv.

Reads one JSON object per line on stdin ({"root", "files", "text", "budget", "render"}) and
writes one JSON object per line, prefixed `RESULT `: the files in Aider's rank order and, when
"render" is true, the map Aider renders in the budget (rendering is most of Aider's time, and
only instances with expected spans need the map).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from aider.io import InputOutput
from aider.repomap import RepoMap


class _CharModel:
    """Aider asks its model for token counts; four characters a token keeps it offline."""

    def token_count(self, text: str) -> int:
        return len(text) // 4


def _mentioned_files(text: str, files: list[str]) -> set[str]:
    words = {w.strip("\"'`*_").rstrip(",.!;:?") for w in text.split()}
    by_name: dict[str, list[str]] = {}
    for f in files:
        by_name.setdefault(Path(f).name, []).append(f)
    found = {f for f in files if f in words}
    for w in words:
        if len(by_name.get(w, [])) == 1:
            found.add(by_name[w][0])
    return found


def main() -> None:
    io = InputOutput(yes=True, pretty=False, fancy_input=False)
    for raw in sys.stdin:
        job = json.loads(raw)
        root = job["root"]
        files = job["files"]
        absolute = [str(Path(root) / f) for f in files]
        repo_map = RepoMap(map_tokens=job["budget"], root=root, main_model=_CharModel(), io=io)
        idents = set(re.split(r"\W+", job["text"]))
        mentioned = _mentioned_files(job["text"], files)
        tags = repo_map.get_ranked_tags([], absolute, mentioned, idents)
        order: list[str] = []
        for tag in tags:
            if tag[0] not in order:
                order.append(tag[0])
        text = ""
        if job.get("render", True):
            text = repo_map.get_ranked_tags_map([], absolute, job["budget"], mentioned,
                                                idents) or ""
        # Aider may print warnings on stdout; the caller reads only lines with this prefix.
        print("RESULT " + json.dumps({"files": order, "map": text}), flush=True)


if __name__ == "__main__":
    main()
