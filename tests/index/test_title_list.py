"""The title searched alone as one more list of the ranking (`rank.title_files`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codeloop.index.rank import WEIGHTS, fuse, order, rank_files, signals, title_files
from codeloop.index.service import RepoIndex

# An issue whose body (the reporter's example, its output) is all about parsing options,
# while its title names what is wrong: the cache files are not removed.
ISSUE = """Cache files are never removed after cleanup

I run the tool with these options and parse the configuration:

    parse_options --verbose --config settings.ini
    parse_options read option verbose, option config, option settings
    options parsed: verbose config settings option option option

The parse step reads every option and every option value as expected.
Options, options: each option is parsed and the parsed option is printed.
"""


# The repository: option parsing, configuration, the cache, and a test of the cache.
FILES = {
    "tool/__init__.py": "",
    "tool/options.py": (
        "def parse_options(argv):\n"
        "    \"\"\"Parse each option and its option value from the command line.\"\"\"\n"
        "    return {option: parse_option_value(option) for option in argv}\n\n\n"
        "def parse_option_value(option):\n"
        "    return option.split('=')[-1]\n"),
    "tool/config.py": (
        "def read_config(path, verbose=False):\n"
        "    \"\"\"Read the settings of a configuration file.\"\"\"\n"
        "    return open(path).read()\n"),
    "tool/cache.py": (
        "def cleanup(directory):\n"
        "    \"\"\"Remove the cache files under `directory`.\"\"\"\n"
        "    for entry in directory.iterdir():\n"
        "        entry.unlink()\n"),
    "tool/tests/test_cache.py": (
        "from tool.cache import cleanup\n\n\n"
        "def test_cleanup_removes_cache_files(tmp_path):\n"
        "    cleanup(tmp_path)  # cache files removed after cleanup\n"),
}


def _repo(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def test_the_title_alone_finds_what_the_body_drowns(tmp_path: Path) -> None:
    index = RepoIndex(_repo(tmp_path / "repo"))
    index.update()
    found = signals(index, ISSUE)
    # The title's own list: the cache module first, its test below it (tests a step lower).
    assert found.lists["title"][:2] == ["tool/cache.py", "tool/tests/test_cache.py"]
    assert found.lists["title"] == title_files(index, ISSUE)
    # The body's words put the options module first everywhere else...
    without = [p for p, _ in fuse(found, weights={**WEIGHTS, "title": 0.0})]
    assert without[0] == "tool/options.py"
    # ...and the title's list brings the cache module up to first place.
    assert fuse(found)[0][0] == "tool/cache.py"
    index.close()


def test_a_one_line_text_is_its_own_title(tmp_path: Path) -> None:
    index = RepoIndex(_repo(tmp_path / "repo"))
    index.update()
    assert title_files(index, "cache files are never removed") == []
    assert signals(index, "  cache files are never removed \n").lists["title"] == []
    # A heading mark is not part of the title.
    assert title_files(index, "## cache cleanup\n\nsome words")[0] == "tool/cache.py"
    index.close()


def test_a_traceback_into_the_repository_leaves_the_title_out(tmp_path: Path) -> None:
    index = RepoIndex(_repo(tmp_path / "repo"))
    index.update()
    frame = ('Traceback (most recent call last):\n'
             '  File "/srv/venv/lib/python3.11/site-packages/tool/options.py", line 5\n'
             'KeyError: option\n')
    found = signals(index, f"Cache files are never removed\n\n{frame}")
    assert found.lists["frames"] == ["tool/options.py"]
    assert found.lists["title"] == []
    index.close()


def test_the_title_list_follows_an_edit(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    index = RepoIndex(root)
    index.update()
    assert "tool/config.py" not in title_files(index, ISSUE)
    # The config module's docstring now holds the title's words (its definitions stay as
    # they were): the list kept for the title is not served after the change.
    (root / "tool" / "config.py").write_text(
        FILES["tool/config.py"].replace("Read the settings of a configuration file.",
                                        "Cache files are removed after cleanup."))
    index.notify_changed(["tool/config.py"])
    assert "tool/config.py" in title_files(index, ISSUE)
    index.close()


def test_a_text_that_is_not_a_task_has_no_title(tmp_path: Path) -> None:
    """A session's per-turn focus (the paths just read, the names they use) is not a task:
    its first line is a path, not a title, and the refresh asks for no title list."""
    index = RepoIndex(_repo(tmp_path / "repo"))
    index.update()
    assert signals(index, ISSUE, titled=False).lists["title"] == []
    assert rank_files(index, ISSUE, titled=False) == order(signals(index, ISSUE, titled=False))
    assert rank_files(index, ISSUE)[0][0] == "tool/cache.py"
    assert rank_files(index, ISSUE, titled=False)[0][0] == "tool/options.py"
    index.close()
