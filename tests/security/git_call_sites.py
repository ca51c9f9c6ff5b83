"""Find every place in a source tree that starts git: calls to subprocess/os.exec*/spawn
whose argv is led by "git" (a literal, a path ending in /git, `shutil.which("git")`, or a name
bound to one, in the module or imported from another), and every argv literal led by git."""

from __future__ import annotations

import ast

_SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "create_subprocess_exec",
             "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe",
             "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnlp", "posix_spawn",
             "posix_spawnp"}


def _is_git(node: ast.AST | None, git_names: set[str]) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value == "git" or node.value.endswith("/git") or \
            node.value.split(" ", 1)[0] == "git"
    if isinstance(node, ast.Starred):
        return _is_git(node.value, git_names)
    if isinstance(node, ast.Name):
        return node.id in git_names
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "which":
        return bool(node.args) and _is_git(node.args[0], git_names)
    return False


def _argv0(node: ast.AST) -> ast.AST | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        return node.elts[0] if node.elts else None
    return node


def _module(rel: str) -> str:
    parts = rel.removesuffix(".py").split("/")
    return ".".join(["codeloop", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _git_names(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Per module, the names bound to "git", a path to git, shutil.which("git"), an argv
    led by one of those, or imported from a module that binds them; to a fixed point."""
    names: dict[str, set[str]] = {rel: set() for rel in trees}
    modules = {_module(rel): rel for rel in trees}
    changed = True
    while changed:
        changed = False
        for rel, tree in trees.items():
            found = set(names[rel])
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module in modules:
                    exported = names[modules[node.module]]
                    found |= {a.asname or a.name for a in node.names if a.name in exported}
                targets: list[ast.expr] = []
                value: ast.AST | None = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                if value is not None and _is_git(_argv0(value), names[rel]):
                    found |= {t.id for t in targets if isinstance(t, ast.Name)}
            if found != names[rel]:
                names[rel], changed = found, True
    return names


def host_git_call_sites(trees: dict[str, ast.Module]) -> list[str]:
    """`file:line` of every call that starts git, and of every argv literal led by git."""
    all_names = _git_names(trees)
    sites: list[str] = []
    for rel, tree in trees.items():
        git_names = all_names[rel]
        for node in ast.walk(tree):
            if isinstance(node, (ast.List, ast.Tuple)) and node.elts and \
                    _is_git(node.elts[0], git_names):
                sites.append(f"{rel}:{node.lineno}")
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in _SPAWNERS:
                continue
            args = [*node.args, *(k.value for k in node.keywords if k.arg in ("args", "argv"))]
            argv = args[1] if name.startswith(("exec", "spawn")) and len(args) > 1 else \
                (args[0] if args else None)
            if argv is not None and _is_git(_argv0(argv), git_names):
                sites.append(f"{rel}:{node.lineno}")
    return sorted(set(sites))


def parse(files: dict[str, str]) -> dict[str, ast.Module]:
    return {rel: ast.parse(text) for rel, text in files.items()}
