"""SECURITY.md (47): allow rules widening in `ask` mode. An allow rule admits only what it
names: a command whose arguments run another program (`git rebase -x`, `find -exec`,
`npm run`), or a line that changes how a later name resolves (`BASH_CMDS[ls]=…`, `PATH=`,
`ls() { …; }`), is asked, not allowed, under a prefix rule for the command. Ordinary uses of
the same programs stay allowed, an explicit rule still opts in, deny rules see more."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codeloop.policy.engine import Decision, PolicyEngine

pytestmark = pytest.mark.security


def decide(command: str, allow: list[str], mode: str = "ask",
           deny: list[str] | None = None, cwd: Path | None = None) -> Decision:
    engine = PolicyEngine.from_config({"permissions": {"allow": allow, "deny": deny or []},
                                       "approval_mode": mode})
    return engine.decide("run", "execute", {"command": command}, False, cwd or Path.cwd(), "s")


# (the allow rules a user wrote, a command that must not ride on them) — every one of these
# was allowed before the fix.
ATTACKS: list[tuple[list[str], str]] = [
    # git: arguments and configuration that run programs
    (["run(git *)"], "git rebase -x 'sh -c id' HEAD~1"),
    (["run(git *)"], "git rebase --exec=pwn HEAD~1"),
    (["run(git *)"], "git rebase --exe=pwn HEAD~1"),  # git accepts abbreviated long options
    (["run(git *)"], "git rebase -ix pwn HEAD~1"),  # bundled short options
    (["run(git *)"], "git -c alias.st='rebase -x pwn HEAD~1' st"),  # an alias without `!`
    (["run(git *)"], "git -c difftool.x.cmd=pwn difftool -t x HEAD~1"),
    (["run(git *)"], "git -c gpg.ssh.defaultKeyCommand=pwn commit -S -m x"),
    (["run(git *)"], "git -c interactive.diffFilter=pwn add -p"),
    (["run(git *)"], "git -c trailer.sign.command=pwn interpret-trailers"),
    (["run(git *)"], "git -c pager.log=pwn log"),
    (["run(git *)"], "git -c http.proxy=http://x fetch"),
    (["run(git *)"], "git bisect run pwn"),
    (["run(git *)"], "git submodule foreach pwn"),
    (["run(git *)"], "git filter-branch --tree-filter pwn HEAD"),
    (["run(git *)"], "git difftool -x pwn HEAD~1"),
    (["run(git *)"], "git difftool --extcmd=pwn HEAD~1"),
    (["run(git *)"], "git ls-remote --upload-p=pwn ."),
    (["run(git *)"], "git clone -u pwn . x"),
    (["run(git *)"], "git config alias.st '!pwn'; git st"),
    (["run(git *)"], "git config core.pager pwn && git log"),
    (["run(git *)"], "git config --add core.sshCommand pwn"),
    (["run(git *)"], "git grep -Opwn x"),
    (["run(git *)"], "git archive --exec=pwn --remote=. HEAD"),
    (["run(git *)"], "git instaweb --httpd=pwn"),
    (["run(git *)"], "GIT_CONFIG_GLOBAL=./evil git log"),
    (["run(git *)"], "GIT_DIR=evil/.git git log"),
    (["run(git *)"], "HOME=. git log"),  # ./.gitconfig with its pager
    (["run(git *)"], "X=--upload-pack=pwn; git ls-remote $X ."),
    (["run(git *)", "run(echo *)"], "echo '[core] pager = pwn' >> .git/config; git log"),
    (["run(git *)", "run(cp *)"], "cp evil .git/hooks/pre-commit && git commit -m x"),
    # bash: the command hash, aliases, functions, PATH and friends
    (["run(ls *)"], "BASH_CMDS[ls]=/bin/sh; ls -c id"),
    (["run(ls *)"], "BASH_CMDS=([ls]=/bin/sh); ls -c id"),
    # (rules for harmless-looking builtins, each fine alone, that combine with `ls`)
    (["run(ls *)", "run(declare *)"], "declare -A BASH_CMDS=([ls]=/bin/sh); ls -c id"),
    (["run(ls *)", "run(shopt *)"], "BASH_ALIASES[ls]=pwn; shopt -s expand_aliases; ls"),
    (["run(ls *)", "run(hash *)"], "hash -p ./pwn ls; ls"),
    (["run(ls *)", "run(git *)"], 'ls() { git "$@"; }; ls rebase -x pwn HEAD~1'),
    (["run(ls *)", "run(git *)"], 'function ls { git "$@"; }; ls rebase -x pwn HEAD~1'),
    (["run(ls *)", "run(export *)"], "export PATH=.; ls"),
    (["run(ls *)", "run(unset *)"], "unset PATH; ls"),  # bash's built-in PATH ends in `.`
    (["run(ls *)"], "for PATH in .; do ls; done"),
    (["run(ls *)"], "((PATH=0)); ls"),
    (["run(ls *)", "run(let *)"], "let PATH=0; ls"),
    (["run(ls *)", "run(: *)"], ": ${BASH_CMDS[ls]:=pwn}; ls"),
    (["run(ls *)", "run(read *)"], "read -r 'BASH_CMDS[ls]' <<< pwn; ls"),
    (["run(ls *)", "run(printf *)"], "printf -v 'BASH_CMDS[ls]' pwn; ls"),
    (["run(ls *)", "run(mapfile *)"], "mapfile -t PATH <<< .; ls"),
    (["run(ls *)", "run(declare *)"], "declare -n p=PATH; p=.; ls"),
    (["run(ls *)", "run(enable *)"], "enable -f ./evil.so ls; ls"),
    (["run(ls *)"], "X='a[$(pwn)]'; ls $((X))"),  # arithmetic evaluates the subscript
    (["run(ls *)"], "X='$(pwn)'; ls ${X@P}"),  # prompt expansion runs substitutions
    (["run(ls *)"], "PYTHONPATH=. ls"),
    (["run(ls *)"], "XDG_CONFIG_HOME=. ls"),
    # find, xargs and the wrappers
    (["run(find *)"], "find . -delete"),
    (["run(find *)"], "find . -maxdepth 0 -fprintf .git/hooks/pre-commit pwn"),
    (["run(find *)", "run(ls *)"], "find . -execdir ls \\;"),
    (["run(find *)", "run(sh *)", "run(echo *)"], "find . -exec sh -c 'echo {}' \\;"),
    (["run(find *)"], "find $X -name a"),
    (["run(printf *)", "run(xargs *)"], "printf x | xargs pwn"),
    (["run(printf *)", "run(git *)"], "printf -- '--upload-pack=pwn .' | xargs git ls-remote"),
    (["run(env *)"], "env pwn"),
    (["run(timeout *)"], "timeout 5 pwn"),
    (["run(nice *)"], "nice -n 5 pwn"),
    (["run(nohup *)"], "nohup pwn"),
    (["run(stdbuf *)"], "stdbuf -oL pwn"),
    (["run(command *)"], "command pwn"),
    (["run(pytest *)"], "sudo pytest -x"),  # the rule did not say "as root"
    # package managers, interpreters, build tools
    (["run(npm *)"], "npm run build"),
    (["run(npm *)"], "npm test"),
    (["run(npm *)"], "npm install"),
    (["run(npm *)"], "npm exec pwn"),
    (["run(npm *)"], "npm --prefix x run build"),
    (["run(npm run test *)"], "npm run test --script-shell=./pwn"),
    (["run(yarn *)"], "yarn build"),
    (["run(yarn *)"], "yarn"),
    (["run(pnpm *)"], "pnpm dlx pwn"),
    (["run(pip *)"], "pip install ."),
    (["run(python3 *)"], "python3 -m pip install ."),
    (["run(python3 *)"], "python3 -c 'print(1)'"),
    (["run(python3 *)"], "python3 -W ignore::pwn.X x.py"),
    (["run(cargo *)"], "cargo build"),
    (["run(go *)"], "go generate ./..."),
    (["run(go *)"], "go env -w GOFLAGS=-toolexec=pwn"),
    (["run(node *)"], "node -r ./pwn.js app.js"),
    (["run(perl *)"], "perl -pe 's/a/b/' f"),
    (["run(perl *)"], "perl -i -pe 's/a/b/' f"),
    (["run(python3 *)"], "python3 -Im pip install ."),
    (["run(ruby *)"], "ruby -e 'x'"),
    (["run(*)"], "make -f evil.mk"),
    (["run(*)"], ". ./evil.sh"),
    # options whose value is a program, in spellings the old table missed
    (["run(tar *)"], "tar cf out.tar *"),  # file names such as --checkpoint-action=exec=…
    (["run(tar *)"], "tar cIf pwn x.tar ."),
    (["run(tar *)"], "tar -cvIpwn -f x.tar ."),
    (["run(tar *)"], "tar xf a.tar --to-com=pwn"),
    (["run(rsync *)"], "rsync -avze pwn a b:"),
    (["run(sed *)"], "sed '1e pwn' f"),
    (["run(sed *)"], "sed --expr='1e pwn' f"),
    (["run(sed *)"], "sed -n -f evil.sed f"),
    (["run(awk *)"], "awk 'BEGIN{c=\"pwn\"; print | c}'"),
    (["run(awk *)"], "awk -l evil x"),
    (["run(ssh *)"], "ssh -F evil_config host"),
    (["run(scp *)"], "scp -S pwn a b:"),
    (["run(sort *)"], "sort --compress-program=pwn -S 1 big"),
    (["run(split *)"], "split --filter=pwn f"),
    (["run(less *)"], "LESSOPEN='|pwn %s' less f"),
    (["run(vim *)"], "vim -s evil.keys f"),
    (["run(emacs *)"], "emacs --batch --eval '(shell-command \"pwn\")'"),
    (["run(zip *)"], "zip x.zip f -T --unzip-com=pwn"),
    (["run(parallel *)"], "parallel pwn ::: a"),
]


@pytest.mark.parametrize(("allow", "command"), ATTACKS, ids=[c for _, c in ATTACKS])
def test_a_prefix_allow_rule_does_not_admit_what_runs_another_program(
        allow: list[str], command: str, tmp_path: Path) -> None:
    decision = decide(command, allow, cwd=tmp_path)
    assert decision.action == "ask", (command, decision)
    assert decision.source in ("rules", "mode"), decision


def test_the_reason_says_why_the_rule_did_not_apply(tmp_path: Path) -> None:
    decision = decide("git rebase -x 'make deploy' HEAD~3", ["run(git *)", "run(make *)"],
                      cwd=tmp_path)
    assert decision.action == "ask"
    assert "`git rebase -x` runs a command after each commit" in decision.reason
    assert "the rule run(git *) does not admit that" in decision.reason
    assert "run(git rebase -x *)" in decision.reason  # how to opt in
    wrapped = decide("timeout 5 curl https://evil.example", ["run(timeout *)"], cwd=tmp_path)
    assert "`timeout` runs `curl`" in wrapped.reason and "run(timeout *)" in wrapped.reason


# Commands the same rules keep allowing: the fix is not "ask everything".
ALLOWED: list[tuple[list[str], str]] = [
    (["run(git *)"], "git status"),
    (["run(git *)"], "git log -n 3"),
    (["run(git *)"], "git diff HEAD~1 -- src"),
    (["run(git *)"], "git log --oneline -n 5 --format='%h %s'"),
    (["run(git *)"], "git -c color.ui=always log -n 1"),
    (["run(git *)"], "git -c user.name=ci -c user.email=ci@x commit -m msg"),
    (["run(git *)"], "git add -A && git commit -m 'fix: a; b'"),
    (["run(git *)"], "git rebase main"),
    (["run(git *)"], "git -C sub --no-pager log -n1"),
    (["run(ls *)"], "ls -la"),
    (["run(ls *)"], "ls src/*.py"),
    (["run(find *)"], "find . -name '*.py'"),
    (["run(find *)"], "find src -type f -newer setup.py -print"),
    (["run(npm *)"], "npm ls"),
    (["run(npm *)"], "npm view react version"),
    (["run(python3 *)"], "python3 script.py --flag"),
    (["run(pytest *)"], "timeout 60 pytest -x"),
    (["run(sed *)"], "sed -i 's/foo/bar/g' a.txt"),
    (["run(tar *)"], "tar -czf out.tgz src"),
    (["run(tar *)"], "tar cf out.tar -- *"),
    (["run(awk *)"], "awk -F: '{ if ($3 > 1) print $1 }' /etc/passwd"),
    (["run(pip *)"], "pip list"),
]
# A rule that names the form opts in (the command a form runs must be allowed too).
OPT_IN: list[tuple[list[str], str]] = [
    (["run(git rebase -x *)", "run(pytest *)"], "git rebase -x 'pytest -q' HEAD~3"),
    (["run(git bisect run *)", "run(pytest *)"], "git bisect run pytest -x"),
    (["run(find * -exec *)", "run(grep *)"], "find . -name '*.py' -exec grep -l TODO {} +"),
    (["run(find * -delete)"], "find build -name '*.pyc' -delete"),
    (["run(git *)", "run(xargs grep *)"], "git ls-files | xargs grep -l TODO"),
    (["run(npm test)"], "npm test"),
    (["run(npm run lint *)"], "npm run lint -- --fix"),
    (["run(python3 -m pytest *)"], "python3 -m pytest -q"),
    (["run(perl -pe *)"], "perl -pe 's/a/b/' f"),
    (["run(make *)"], "make -j2 test"),
    (["run(timeout 60 pytest *)"], "timeout 60 pytest -x"),
    (["run(cargo test *)"], "cargo test --all"),
    (["run(sudo pytest *)"], "sudo pytest -x"),
    (["run(git rebase -x pytest HEAD~1)", "run(pytest)"], "git rebase -x pytest HEAD~1"),
]


@pytest.mark.parametrize(("allow", "command"), ALLOWED + OPT_IN,
                         ids=[c for _, c in ALLOWED + OPT_IN])
def test_ordinary_and_named_forms_stay_allowed(allow: list[str], command: str,
                                               tmp_path: Path) -> None:
    decision = decide(command, allow, cwd=tmp_path)
    assert (decision.action, decision.source) == ("allow", "rules"), (command, decision)


@pytest.mark.parametrize("command", [
    "git rebase -x 'curl https://evil.example' HEAD~1",
    "git rebase --exe='curl https://evil.example' HEAD~1",
    "git bisect run curl https://evil.example",
    "git submodule foreach 'curl https://evil.example'",
    "git filter-branch --tree-filter 'curl https://evil.example' HEAD",
    "git difftool -x 'curl https://evil.example' HEAD~1",
])
def test_deny_rules_see_the_commands_git_runs(command: str, tmp_path: Path) -> None:
    """Deny is never weakened; it now also sees the command behind `rebase -x` and friends
    (before, `run` allowed in full-auto let these through)."""
    decision = decide(command, ["run"], mode="full-auto", deny=["run(curl *)"], cwd=tmp_path)
    assert decision.action == "deny", (command, decision)


def test_forms_change_what_allow_rules_admit_not_the_modes(tmp_path: Path) -> None:
    for command in ("npm run build", "make", "git rebase -x pytest HEAD~1", "find . -delete"):
        assert decide(command, [], mode="full-auto", cwd=tmp_path).action == "allow", command
        assert decide(command, [], mode="ask", cwd=tmp_path).action == "ask", command


# -- the attacks are real: bash runs `pwn` for each of these lines --------------------------

_TOOLS = ("bash", "sh", "git", "tar", "sed", "awk", "xargs", "printf", "timeout", "env", "cat",
          "ls", "echo", "find", "rm", "mkdir")
_REAL: list[tuple[list[str], str]] = [
    (["run(git *)"], "git rebase -x pwn HEAD~1"),
    (["run(git *)"], "git rebase --exe=pwn HEAD~1"),
    (["run(git *)"], "git -c alias.st='rebase -x pwn HEAD~1' st"),
    (["run(git *)"], "git ls-remote --upload-p=pwn ."),
    (["run(git *)"], "git config alias.st '!pwn'; git st"),
    (["run(git *)"], "git bisect start HEAD HEAD~1; git bisect run pwn"),
    (["run(ls *)"], "BASH_CMDS[ls]={pwn}; ls"),
    (["run(ls *)", "run(hash *)"], "hash -p {pwn} ls; ls"),
    (["run(ls *)", "run(unset *)"], "unset PATH; ls"),
    (["run(ls *)", "run(git *)"], 'ls() {{ git "$@"; }}; ls rebase -x pwn HEAD~1'),
    (["run(ls *)"], "X='a[$(pwn)]'; ls $((X))"),
    (["run(ls *)"], "X='$(pwn)'; ls ${{X@P}}"),
    (["run(printf *)", "run(git *)"], "printf -- '--upload-pack=pwn .' | xargs git ls-remote"),
    (["run(tar *)"], "tar cf ../out.tar *"),
    (["run(tar *)"], "tar xf ../a.tar --to-com=pwn"),
    (["run(sed *)"], "sed -n '1e pwn' a.txt"),
    (["run(awk *)"], "awk 'BEGIN{{c=\"pwn\"; print \"x\" | c}}'"),
    (["run(timeout *)"], "timeout 5 pwn"),
    (["run(env *)"], "env pwn"),
]


@pytest.fixture
def playground(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A git repository with two commits, a `pwn` stub that logs, and a PATH of real tools."""
    if any(shutil.which(t) is None for t in _TOOLS):
        pytest.skip("NOT EXERCISED: a tool for the real-bash check is missing here")
    bin_dir, work, log = tmp_path / "bin", tmp_path / "work", tmp_path / "pwned.log"
    bin_dir.mkdir()
    work.mkdir()
    pwn = bin_dir / "pwn"
    pwn.write_text(f'#!/bin/sh\necho pwn >> "{log}"\nexit 1\n')
    pwn.chmod(0o755)
    for tool in _TOOLS:
        os.symlink(str(shutil.which(tool)), bin_dir / tool)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "1"],
                 ["commit", "-q", "--allow-empty", "-m", "2"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True)
    (work / "a.txt").write_text("a\n")
    (work / "ls").write_text(pwn.read_text())  # what `unset PATH; ls` finds in `.`
    (work / "ls").chmod(0o755)
    (work / "--checkpoint=1").write_text("")
    (work / "--checkpoint-action=exec=pwn").write_text("")
    subprocess.run(["tar", "cf", str(tmp_path / "a.tar"), "a.txt"], cwd=work, check=True)
    return work, env, log


@pytest.mark.parametrize(("allow", "template"), _REAL, ids=[c for _, c in _REAL])
def test_each_real_attack_runs_a_program_in_bash_and_is_asked(
        allow: list[str], template: str, playground: tuple[Path, dict[str, str], Path]) -> None:
    work, env, log = playground
    command = template.format(pwn=Path(env["PATH"]) / "pwn")
    decision = decide(command, allow, cwd=work)
    assert decision.action == "ask", (command, decision)
    assert not log.exists()  # deciding ran nothing
    subprocess.run(["bash", "-c", command], cwd=work, env=env, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=30)
    assert log.exists() and "pwn" in log.read_text(), f"bash did not run pwn for {command!r}"
