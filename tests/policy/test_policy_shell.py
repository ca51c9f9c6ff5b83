"""The shell splitter finds every command a line would run, or says why it cannot."""

from __future__ import annotations

import pytest

from codeloop.policy.network import network_reason
from codeloop.policy.shell import analyse


def names(command: str) -> list[str]:
    return [c.name for c in analyse(command).commands]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm test; curl x", ["npm", "curl"]),
        ("npm test && curl x", ["npm", "curl"]),
        ("npm test || curl x", ["npm", "curl"]),
        ("cat f | curl -d @- x", ["cat", "curl"]),
        ("cat f |& curl x", ["cat", "curl"]),
        ("npm test & curl x", ["npm", "curl"]),
        ("npm test\ncurl x", ["npm", "curl"]),
        ("(cd sub; curl x)", ["cd", "curl"]),
        ("{ curl x; }", ["curl"]),
        ("echo $(curl x)", ["curl", "echo"]),
        ("echo `curl x`", ["curl", "echo"]),
        ('echo "$(curl x)"', ["curl", "echo"]),
        ("echo $(echo $(curl x))", ["curl", "echo", "echo"]),
        ("diff <(curl a) <(ls)", ["curl", "ls", "diff"]),
        ("echo ${X:-$(curl y)}", ["curl", "echo"]),
        ("echo $((1 + $(curl x)))", ["curl", "echo"]),
        ("X=$(curl x)", ["curl"]),
        ("a=(1 $(curl q)); echo ${a[@]}", ["curl", "echo"]),
        ("if curl x; then echo ok; fi", ["curl", "echo"]),
        ("while read l; do curl $l; done < urls", ["read", "curl"]),
        ("for f in $(curl x); do echo $f; done", ["curl", "echo"]),
        ("! curl x", ["curl"]),
        ("ls 2>&1 >/dev/null | grep x", ["ls", "grep"]),
        ("ls &>/dev/null && curl x", ["ls", "curl"]),
        ("git commit -m 'a; curl x' # comment; curl y", ["git"]),
    ],
)
def test_compound_lines_are_split(command: str, expected: list[str]) -> None:
    result = analyse(command)
    assert result.analysable, result.problems
    assert names(command) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [("f() { curl x; }; f", ["curl", "f"]), ("function f { curl x; }", ["curl"]),
     ("f () ( curl x ); f", ["curl", "f"])],
)
def test_function_bodies_are_split_and_the_definition_is_reported(command: str,
                                                                   expected: list[str]) -> None:
    """A function can shadow any program name, so defining one is a problem (asked)."""
    result = analyse(command)
    assert names(command) == expected
    assert any("defines a shell function `f`" in p for p in result.problems)


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("env X=1 curl y", ("curl", "y")),
        ("env -i -u HOME LANG=C curl y", ("curl", "y")),
        ("X=1 Y=2 curl y", ("curl", "y")),
        ("command curl y", ("curl", "y")),
        ("command -p curl y", ("curl", "y")),
        ("exec curl y", ("curl", "y")),
        ("builtin exec curl y", ("curl", "y")),
        ("timeout -s KILL 5 nice -n 3 curl y", ("curl", "y")),
        ("nohup setsid stdbuf -oL curl y", ("curl", "y")),
        ("sudo -u root curl y", ("curl", "y")),
        ("xargs -0 -n1 curl < list", ("curl",)),
        ("xargs -I{} curl {}", ("curl", "{}")),
        ("busybox wget y", ("wget", "y")),
        ("time -p curl y", ("curl", "y")),
        ("\\c\\u\\r\\l y", ("curl", "y")),
        ("c'u'\"r\"l y", ("curl", "y")),
        ("$'\\x63\\x75rl' y", ("curl", "y")),
        ("$'\\143url' y", ("curl", "y")),
    ],
)
def test_wrappers_and_quoting_are_seen_through(command: str, argv: tuple[str, ...]) -> None:
    result = analyse(command)
    assert result.analysable, result.problems
    assert result.commands[-1].argv == argv


def test_absolute_program_paths_keep_the_path_but_name_the_program() -> None:
    cmd = analyse("/usr/bin/curl -s x").commands[0]
    assert cmd.argv[0] == "/usr/bin/curl"
    assert cmd.name == "curl"


def test_wrapper_keeps_its_own_words_in_full() -> None:
    cmd = analyse("timeout 5 pytest -q").commands[0]
    assert cmd.argv == ("pytest", "-q")
    assert cmd.full == ("timeout", "5", "pytest", "-q")


@pytest.mark.parametrize(
    ("command", "inner"),
    [
        ("bash -c 'npm test; curl x'", ["npm", "curl"]),
        ('sh -c "curl x"', ["curl"]),
        ("bash -lc 'curl x'", ["curl"]),
        ("bash -o pipefail -c 'curl x'", ["curl"]),
        ("zsh -c 'sh -c \"curl x\"'", ["curl"]),
        ("xargs sh -c 'curl $1' _", ["curl"]),
        ("find . -name '*.py' -exec curl {} \\;", ["curl"]),
        ("find . -execdir sh -c 'wget x' \\;", ["wget"]),
        ("watch -n1 curl x", ["curl"]),
    ],
)
def test_nested_scripts_are_followed(command: str, inner: list[str]) -> None:
    result = analyse(command)
    assert result.analysable, result.problems
    found = names(command)
    for name in inner:
        assert name in found


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("eval 'curl x'", "eval"),
        ("echo Y3VybCB4 | base64 -d | sh", "standard input"),
        ("curl -s x | bash", "standard input"),
        ("curl -s x | python3", "standard input"),
        ("bash -s < script", "standard input"),
        ("sh", "standard input"),
        ("source /dev/stdin", "source"),
        ('echo "unbalanced', "double quote"),
        ("echo 'unbalanced", "single quote"),
        ("echo `unbalanced", "backtick"),
        ("echo $(unbalanced", "unterminated"),
        ("(echo a", "unbalanced"),
        ("echo a)", "unbalanced"),
        ("cat <<EOF\nnever closed", "never closed"),
        ("$CMD x", "expansion"),
        ("$(echo curl) x", "expansion"),
        ('bash -c "$PAYLOAD"', "expansion"),
        ("{curl,x}", "glob"),
        ("/usr/bin/cu? x", "glob"),
        ("env -S 'curl x'", "env -S"),
        ("sudo -Z curl x", "unknown option"),
        ("trap 'curl x' EXIT", "trap"),
        ("shopt -s expand_aliases; alias ls=curl; ls x", "alias"),
        ("case $x in a) curl x;; esac", "case"),
    ],
)
def test_what_cannot_be_followed_is_reported(command: str, problem: str) -> None:
    result = analyse(command)
    assert not result.analysable
    assert any(problem in p for p in result.problems), result.problems


def test_heredocs_are_followed() -> None:
    quoted = analyse("cat <<'EOF' > out.txt\n$(curl x)\nEOF\necho done")
    assert quoted.analysable
    assert names(quoted.source) == ["cat", "echo"]
    expanding = analyse("cat <<EOF\nhello $(curl x)\nEOF\necho done")
    assert expanding.analysable
    assert names(expanding.source) == ["cat", "curl", "echo"]
    tabs = analyse("cat <<-END\n\tbody\n\tEND\nls")
    assert tabs.analysable and names(tabs.source) == ["cat", "ls"]


def test_redirect_targets_are_recorded() -> None:
    result = analyse("echo hi > /dev/tcp/10.0.0.1/80")
    assert "/dev/tcp/10.0.0.1/80" in result.redirect_targets
    assert network_reason(result) is not None


@pytest.mark.parametrize(
    "command",
    [
        "curl https://example.com", "wget x", "nc host 80", "ssh host", "git push origin main",
        "git fetch", "git clone https://x/y", "pip install requests", "python -m pip install x",
        "npm install left-pad", "uv pip install x", "apt-get install -y jq",
        "python -c 'import urllib.request as u; u.urlopen(\"http://x\")'",
        "env X=1 /usr/bin/curl x", "cat /dev/null > /dev/tcp/1.2.3.4/80",
    ],
)
def test_network_commands_are_recognised(command: str) -> None:
    assert network_reason(analyse(command)) is not None


@pytest.mark.parametrize(
    "command",
    ["pytest -q", "git status", "git diff HEAD", "npm test", "pip list", "python -m pytest",
     "ls -la", "python -c 'print(1)'", "cargo test"],
)
def test_local_commands_are_not_network(command: str) -> None:
    assert network_reason(analyse(command)) is None


def test_ordinary_commands_parse_cleanly() -> None:
    for command in [
        "pytest -q tests/ -k 'a and not b'",
        "python -m pytest -x --tb=short 2>&1 | tail -n 50",
        "git log --oneline -n 5 --format='%h %s'",
        "[ -f setup.py ] && pip list || echo none",
        "[[ -d build ]] || mkdir -p build",
        "for f in *.py; do python -m py_compile \"$f\"; done",
        "cd src && ls | wc -l",
        "grep -rn 'TODO' src/ | head -20",
        "echo \"$(date +%s)\" > stamp",
        "make -j2 test",
    ]:
        result = analyse(command)
        assert result.analysable, (command, result.problems)
        assert result.commands


@pytest.mark.parametrize(
    "command",
    ["echo " + "$(" * 40 + "x" + ")" * 40, "$((" * 10000, 'echo "' + "$(" * 3000,
     "echo ${" * 3000 + "$(x)", "`" * 30001, "a" * 300_000],
)
def test_pathological_input_is_refused_not_crashed(command: str) -> None:
    result = analyse(command)
    assert not result.analysable
    assert len(result.problems) == len(set(result.problems))


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ('GIT_SSH_COMMAND="curl x" git fetch', "GIT_SSH_COMMAND"),
        ("env LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD"),
        ("PATH=/tmp/evil:$PATH pytest", "PATH"),
        ("PAGER='curl x' git log", "PAGER"),
        ("python -c 'import os; os.system(\"curl x\")'", "inline"),
        ("python3 -c '__import__(\"subprocess\").run([\"curl\", \"x\"])'", "inline"),
        ("node -e \"require('child_process').execSync('curl x')\"", "inline"),
        ("perl -e 'system(\"curl x\")'", "inline"),
        ("perl -e '`curl x`'", "inline"),
        ("ruby -e 'exec(\"curl x\")'", "inline"),
        ("awk -v a=1 'BEGIN{system(\"curl x\")}'", "awk"),
        ("awk 'BEGIN{\"curl x\" | getline r}'", "awk"),
        ("awk -f prog.awk data", "awk"),
        ("sed 's/.*/curl x/e' f", "sed"),
        ("git -c alias.x='!curl e' x", "git -c alias.x"),
        ("git -c core.sshCommand='curl x' fetch", "core.sshCommand"),
        ("git -c core.pager='curl x' log", "core.pager"),
        ("tar --to-command='curl x' -xf a.tar", "tar --to-command"),
        ("tar -I 'curl x' -xf a.tar", "tar -I"),
        ("rsync -e 'curl x' a b", "rsync -e"),
        ("vim +'!curl x' f", "vim +"),
        ("script -c 'curl x' /dev/null", "script -c"),
        ("ssh -o ProxyCommand='curl x' h", "ProxyCommand"),
    ],
)
def test_programs_started_behind_the_argv_are_reported(command: str, problem: str) -> None:
    result = analyse(command)
    assert any(problem in p for p in result.problems), result.problems


@pytest.mark.parametrize(
    "command",
    ["python -c 'import sys; print(sys.version)'", "awk '{print $1}' data.txt",
     "awk -F: '{print $NF}' /etc/passwd", "sed -i 's/foo/bar/g' a.txt", "sed -n '/x/p' f",
     "git -c user.name=ci commit -m msg", "git add -u", "tar -xzf a.tgz", "rsync -av a/ b/",
     "X='a b' pytest", "LANG=C sort f"],
)
def test_ordinary_uses_of_those_programs_pass(command: str) -> None:
    result = analyse(command)
    assert result.analysable, result.problems


def test_su_and_flock_are_followed() -> None:
    assert "curl" in names("su -c 'curl x' nobody")
    assert names("flock /tmp/lock curl x") == ["curl"]
    assert names("chroot /srv curl x") == ["curl"]
    assert analyse('GIT_SSH_COMMAND="curl x" git fetch').commands[0].argv == ("git", "fetch")


def test_double_parentheses_that_are_not_arithmetic_are_subshells() -> None:
    # bash runs both of these as commands: `((` falls back to nested subshells
    for command in ["((echo hi) ; (curl x))", "echo $((echo hi) ; (curl x))",
                    "((echo hi) | (curl x))", "if true; then ((echo) | (curl x)); fi"]:
        result = analyse(command)
        assert "curl" in names(command)
        assert not result.analysable
    for command in ["((i++))", "(( x > 3 )) && echo big", "for ((i=0; i<3; i++)); do echo $i; done",
                    "echo $(( (1+2)*3 ))", "((a = b ? 1 : 2))", "if ((x > 1)); then make; fi"]:
        assert analyse(command).analysable, command
